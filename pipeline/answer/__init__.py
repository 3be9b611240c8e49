"""The one answer about a position, behind every face (`expect`, `move`, the Python API, `serve`,
the explorer, `play`): :class:`pipeline.answer.answers.Answers` over an index of the solved
values held in memory (:mod:`pipeline.answer.index`), typed answers that turn into JSON
(:mod:`pipeline.answer.model`), what a data directory holds (:mod:`pipeline.answer.catalog`,
:mod:`pipeline.answer.describe`).

A layer of its own, between the analysis and the applications: it reads the tables through the
store and asks each game's rules for its moves (:mod:`pipeline.games.base`); the faces only
format what it returns.
"""
