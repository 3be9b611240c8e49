"""The one answer about a position, behind every face (`expect`, `move`, the Python API, `serve`,
the explorer, `play`): :class:`pipeline.answer.answers.Answers` over the solved values the store
reads (:mod:`pipeline.store.states`), typed answers that turn into JSON
(:mod:`pipeline.answer.model`), and what a page needs to draw a variant's positions
(:mod:`pipeline.answer.describe`).

A layer of its own, between the analysis and the applications: it keeps the position logic only,
reads the tables through the store (what a data directory holds: :mod:`pipeline.store.directory`)
and asks each game's rules for its moves (:mod:`pipeline.games.base`); the faces only format what
it returns.
"""
