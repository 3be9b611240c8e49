"""The stages of a build and the tables each writes (plain names: the graph build's rows and the
streamed build both read them)."""

#: The stages, in the order a build runs them.
STAGES = ("enumerate", "edges", "solve", "policy", "strategies")
#: Which tables each stage writes.
STAGE_TABLES = {
    "enumerate": ("states",),
    "edges": ("edges",),
    "solve": ("states",),
    "policy": ("policy", "moves"),
    "strategies": ("strategy_search", "strategy_exceptions"),
}
