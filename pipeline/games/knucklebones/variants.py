"""Named Knucklebones boards (solved by value iteration)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.games.registry import Variant, register


def knucklebones(
    name: str, description: str, in_all: bool = True, gpu: bool = False, **rules: Any
) -> Variant:
    """Register a Knucklebones board with the given KnuckleRules fields."""

    def make() -> Any:
        from pipeline.games.knucklebones.exact.stream import StreamedKnucklebones
        from pipeline.games.knucklebones.game import KnuckleRules

        return StreamedKnucklebones(KnuckleRules(**rules))

    def board() -> Any:
        from pipeline.games.knucklebones.columns import BoardRules
        from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules

        return BoardRules(Knucklebones(KnuckleRules(**rules)))

    def parser() -> Callable[..., int]:
        from pipeline.games.knucklebones.numbering import KnuckleRules, Numbering  # (no numpy)

        return Numbering(KnuckleRules(**rules)).parse_state

    # the boards left out of `all` hold tens of millions of rows: they get files of their own
    variant = Variant(
        name,
        description,
        make,
        in_all,
        family="knucklebones",
        separate=not in_all,
        board=board,
        view="boards",
        parser=parser,
        builds_anywhere=not gpu,
    )
    return register(variant)


knucklebones(
    "knucklebones-2x2",
    "Knucklebones, 2 columns x 2 rows, six-sided die, maximise P(win) (a draw counts 1/2)",
    columns=2,
    rows=2,
)
knucklebones(
    "knucklebones-2x2-score",
    "Knucklebones, 2 columns x 2 rows, six-sided die, maximise the expected score difference",
    columns=2,
    rows=2,
    objective="score",
)
knucklebones(
    "knucklebones",
    "Knucklebones as in Cult of the Lamb (3x3, six-sided die), maximise P(win); built only "
    "with `build --device cuda` on one GPU (else `knucklebones solve` searches)",
    in_all=False,
    gpu=True,
)
for _cols, _rows, _faces in ((2, 3, 6), (3, 2, 6), (3, 3, 4)):
    _suffix = "" if _faces == 6 else f"-d{_faces}"
    for _objective, _what in (("wins", "P(win)"), ("score", "the expected score difference")):
        knucklebones(
            f"knucklebones-{_cols}x{_rows}{_suffix}" + ("-score" if _objective == "score" else ""),
            f"Knucklebones, {_cols} columns x {_rows} rows, {_faces}-sided die, maximise {_what} "
            "(minutes; not in all)",
            in_all=False,
            columns=_cols,
            rows=_rows,
            faces=_faces,
            objective=_objective,
        )
knucklebones(
    "knucklebones-score",
    "Knucklebones as in Cult of the Lamb (3x3, six-sided die), maximise the expected score "
    "difference; built only with `build --device cuda` on one GPU",
    in_all=False,
    gpu=True,
    objective="score",
)
