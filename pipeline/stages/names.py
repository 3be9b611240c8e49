"""The stages of a build (a plain name: the graph build's rows and the streamed build both read
it)."""

#: The stages, in the order a build runs them.
STAGES = ("enumerate", "edges", "solve", "policy", "strategies")
