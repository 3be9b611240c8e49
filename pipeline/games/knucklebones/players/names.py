"""A search player's name from its parts, as every face writes it (``net-d3+5/12000``): the
engine parses it (:func:`~pipeline.games.knucklebones.players.engine.policy`), the answers,
ratings and records write it. Kept free of numba: an answer names its player."""

from __future__ import annotations


def player_name(
    prefix: str, depth: int, deeper: int | None = None, leaves: int | None = None
) -> str:
    """``prefix-dDEPTH``, ``+DEEPER`` where close calls go deeper, ``/LEAVES`` where that is
    bounded (``prefix``: ``net``, ``ours`` or ``seed``)."""
    name = f"{prefix}-d{depth}"
    if deeper and deeper > depth:
        name += f"+{deeper}" + (f"/{leaves}" if leaves else "")
    return name


def player_record(depth: int, deeper: int, leaves: int) -> dict[str, int | None]:
    """An evaluator's record of the player it was rated as, which the answers play
    (:class:`~pipeline.games.knucklebones.columns.BoardRules`): ``depth``, ``deeper`` (None:
    no deeper) and ``leaves`` (None: no bound)."""
    close = deeper > depth
    return {
        "depth": depth, "deeper": deeper if close else None,
        "leaves": leaves if close and leaves else None,
    }  # fmt: skip
