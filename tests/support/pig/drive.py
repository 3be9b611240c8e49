"""Every face of the pipeline asked about Pig, in a process that sees the plugin installed
(``site/`` on its path: its ``.dist-info`` declares the entry point): run by ``test_pig.py``,
it prints one JSON object of what each face said."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path


def cli(*args: str) -> tuple[int, str]:
    """A command's exit code and stdout (the CLI as `stb-pipeline` runs it)."""
    from pipeline.cli.app import run

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run([str(a) for a in args])
    return code, out.getvalue()


def main(data: Path) -> None:
    from starlette.testclient import TestClient

    import pipeline
    from pipeline.apps.server.web import create_app

    said: dict = {"build": cli("build", "--variant", "pig-12,pig-50", "-d", data, "-q")[0]}
    said["expect"] = cli("expect", "--variant", "pig-12", "0/0", "-d", data)
    said["move"] = cli("move", "--variant", "pig-12", "2/3/4", "2", "-d", data)
    said["query"] = cli("query", "top_states", "--variant", "pig-12", "-d", data, "-f", "csv")
    said["verify"] = cli("verify", "--variant", "pig-12", "-d", data)
    said["variants"] = cli("variants", "-d", data)
    said["api"] = {
        "expect": pipeline.expect("pig-12", "0/0", data_dir=data),
        "best_move": pipeline.best_move("pig-12", "2/3/4", 2, data_dir=data),
    }
    states = pipeline.load_table("states", "pig-12", data)
    said["states"] = dict(zip(states["tiles"].to_list(), states["value"].to_list(), strict=True))
    moves = pipeline.load_table("moves", "pig-12", data).filter(is_best=True)
    said["picks"] = [[t, r, m[0]] for t, r, m in moves.select("tiles", "roll", "move").rows()]
    # goal 50, where holding is sometimes best: every value and pick, as Parquet beside data
    for table, kept in (("states", ["tiles", "value"]), ("moves", ["tiles", "roll", "move"])):
        rows = pipeline.load_table(table, "pig-50", data)
        rows = rows.filter(is_best=True) if table == "moves" else rows
        rows.select(kept).write_parquet(data.parent / f"pig-50-{table}.parquet")
    client = TestClient(create_app(data))
    said["serve"] = {
        "position": client.get("/pig-12/position.json?tiles=2/3/4&roll=2").json(),
        "describe": client.get("/pig-12.json").json()["variant"],
        "page": client.get("/pig-12/position?tiles=0/0").status_code,
    }
    print(json.dumps(said))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
