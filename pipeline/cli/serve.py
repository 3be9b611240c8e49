"""`stb-pipeline serve`: a local web server to look up any position of every built variant.

No `from __future__ import annotations` here: typer reads the annotations at run time.
"""

import sys
from typing import Annotated

import typer

from pipeline.apps.server import DEFAULT_HOST, DEFAULT_PORT
from pipeline.apps.server.sent import DEFAULT_MB as ANSWER_CACHE_MB
from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir

Port = Annotated[int, typer.Option("--port", "-p", min=1, max=65535, help="TCP port to listen on.")]
Host = Annotated[
    str,
    typer.Option(
        "--host",
        help="Address to listen on (default: this machine only; 0.0.0.0 opens it to the network).",
    ),
]
Cors = Annotated[
    bool, typer.Option("--cors", help="Send Access-Control-Allow-Origin: * (off by default).")
]
CacheMb = Annotated[
    int,
    typer.Option(
        "--cache-mb",
        min=16,
        max=65536,
        help="Memory for the value arrays of big variants (MB), per server process.",
    ),
]
AnswerCacheMb = Annotated[
    int,
    typer.Option(
        "--answer-cache-mb",
        min=0,
        max=4096,
        help="Memory for answers already sent (MB), per server process: a position asked "
        "again is sent again until the tables change (0: none).",
    ),
]
Workers = Annotated[
    int,
    typer.Option(
        "--workers",
        "-w",
        min=1,
        max=64,
        help="Server processes sharing the port (each holds its own tables in memory).",
    ),
]
SearchWorkers = Annotated[
    int,
    typer.Option(
        "--search-workers",
        min=1,
        max=64,
        help="Processes per server process that run the Knucklebones searches (boards "
        "without tables).",
    ),
]
SearchQueue = Annotated[
    int | None,
    typer.Option(
        "--search-queue",
        min=1,
        max=10000,
        help="Searches a server process takes at once, waiting or running; one more is "
        "answered 503 with Retry-After (default: 16 per search worker).",
    ),
]


def serve_cmd(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    port: Port = DEFAULT_PORT,
    host: Host = DEFAULT_HOST,
    cors: Cors = False,
    cache_mb: CacheMb = 256,
    workers: Workers = 1,
    search_workers: SearchWorkers = 1,
    search_queue: SearchQueue = None,
    answer_cache_mb: AnswerCacheMb = ANSWER_CACHE_MB,
) -> None:
    """Serve a page (and its JSON API) to look up any position of every built variant.

    Reads the tables of DATA_DIR and never writes. Every page has a .json twin: /.json
    lists the variants, /NAME.json describes one, /NAME/position.json?tiles=1245&roll=7
    answers a position (docs/commands.md). Knucklebones boards without tables are
    searched in --search-workers processes; --workers N serves from N processes. Ctrl-C
    stops it.

    Example: stb-pipeline serve --data-dir data --port 8025
    """
    import importlib

    from pipeline.apps.server import INSTALL_HINT
    from pipeline.errors import UsageError

    if search_queue is not None and search_queue < search_workers:
        raise UsageError(
            f"--search-queue {search_queue} is smaller than --search-workers "
            f"{search_workers}: the queue holds the searches running too"
        )
    if not data_dir.is_dir():
        raise UsageError(f"data directory {data_dir} does not exist: build a variant first")
    for module in ("starlette", "uvicorn", "orjson"):  # the optional extra
        try:
            importlib.import_module(module)
        except ImportError:
            raise UsageError(f"serve needs the {module} package: {INSTALL_HINT}") from None
    from pipeline.apps.server.web import serve

    def ready(url: str) -> None:
        how = f" from {workers} server processes" if workers > 1 else ""
        print(f"serving {data_dir} at {url}{how} (Ctrl-C stops)", flush=True)

    serve(
        data_dir, host, port, cors=cors, cache_mb=cache_mb, ready=ready, workers=workers,
        search_workers=search_workers, search_queue=search_queue, answer_cache_mb=answer_cache_mb,
    )  # fmt: skip
    print("stopped", file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add the `serve` command."""
    app.command("serve")(serve_cmd)
