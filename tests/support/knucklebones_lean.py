"""The full Knucklebones game's table layout on a small board, without a GPU.

`build --variant knucklebones --device cuda` writes the full game's ``states`` table lean (the id
and the value) and its ``decisions`` table; the lookups, `verify` and the full-game queries read
them. :func:`write_lean` writes the same files for any board from the CPU solver, so that those
readers run in the tests on a board small enough to solve in a second.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.games.knucklebones.game import KnuckleRules


def write_lean(data: Path, name: str, rules: KnuckleRules) -> None:
    """The lean states table of ``rules`` (the full game's layout), from the CPU solver, and
    its decisions table, as ``build --device cuda`` commits them: variants/<name>/*.parquet."""
    from pipeline.games.knucklebones.exact.stream import StreamedKnucklebones, lean_stream
    from pipeline.games.registry import Variant
    from pipeline.stages import streamed as streamed_build
    from pipeline.store import catalog, layout

    game = StreamedKnucklebones(rules)
    variant = Variant(name, "test", lambda: game, False, family="knucklebones", separate=True)
    staged, _ = streamed_build.write_streamed(
        variant, game, lean_stream(game, rows=1 << 14, device="cpu"), data
    )
    for key, table in staged.items():
        Path(table.path).rename(layout.table_path(data, key))
    catalog.refresh(data)  # a commit rewrites the catalog: its views now read these files too


def write_lean_pair(data: Path, name: str, rules: KnuckleRules) -> None:
    """Both objectives of ``rules``'s board, lean: ``name`` (wins) and ``name-score``."""
    for objective in ("wins", "score"):
        suffix = "-score" if objective == "score" else ""
        board = KnuckleRules(rules.columns, rules.rows, rules.faces, objective)
        write_lean(data, f"{name}{suffix}", board)


def copy_lean(template: Path, data: Path, names: tuple[str, ...] | None = None) -> None:
    """Into ``data``, the lean tables :func:`write_lean` wrote under ``template`` (``names``:
    those variants only; None: all), and the catalog refreshed for ``data`` as
    :func:`write_lean` leaves it: the same files as writing them again, without the solve."""
    import shutil

    from pipeline.store import catalog, directory

    for source in sorted((template / "variants").iterdir()):
        if names is None or source.name in names:
            shutil.copytree(source, data / "variants" / source.name)
    catalog.refresh(data)  # the template's catalog reads the template: never copied
    # as a commit says it: this process's readers see the new files at once (writing them took
    # the solve's seconds, longer than a reader keeps its look at the directory)
    directory.changed(data)
