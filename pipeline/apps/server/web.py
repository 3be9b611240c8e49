"""The web application of `stb-pipeline serve` (starlette; uvicorn runs it).

Pages and their JSON, Datasette's way: every page has a ``.json`` twin with the same parameters,
the server only reads, parameters reach DuckDB bound, and no CORS header is sent unless asked
(``cors=True``):

====================================  =========================================================
``/`` and ``/.json``                  the variants: built ones, and the others with the command
                                      that builds them; problems reading a table file
``/{variant}`` and ``/{variant}.json``  what the page needs to draw it (rules, view, start,
                                      the state fields of a game with several players)
``/{variant}/position`` and ``.json``  one position: value, dice choice, every roll's best move;
                                      with ``roll`` (``die`` for Knucklebones) every move ranked
====================================  =========================================================

A page is one HTML template with the same JSON embedded, so it paints without a second request
and a link restores what it showed. Errors are one line: 400 for a bad request (unknown variant
or parameter, malformed tiles or board, a number out of range, a path that is no page), 404 for
a variant that is not built, 503 for a table that cannot be read; never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import logging
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from pipeline.apps.server.positions import Positions
from pipeline.errors import PipelineError, TableError, TablesMissingError, UsageError

#: The longest query string accepted (a 24-tile position with its fields is about 100 bytes).
MAX_QUERY = 1000
#: Where the page's data goes in the template.
DATA_MARK = "/*SERVE_DATA*/null"
TEMPLATE = "serve.html"
log = logging.getLogger("stb-pipeline.serve")


def status_of(exc: Exception) -> int:
    """The HTTP status of an error: the user's (400), not built (404), the tables' (503)."""
    if isinstance(exc, UsageError):
        return 400
    if isinstance(exc, TablesMissingError):
        return 404
    if isinstance(exc, TableError):
        return 503
    if isinstance(exc, PipelineError):
        return 400
    return 500


def one_line(exc: Exception) -> str:
    """The error as the one line the CLI would print (never a traceback)."""
    if isinstance(exc, PipelineError):
        text = str(exc)
    else:
        text = "internal error; the server log has the details"
    return (text.splitlines() or ["error"])[0]


def template() -> str:
    """The page (package data: pipeline/templates/serve.html)."""
    return resources.files("pipeline").joinpath("templates", TEMPLATE).read_text("utf-8")


def render(data: dict[str, Any]) -> str:
    """The page with ``data`` embedded in its script ("<" escaped so no text can end it)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    return template().replace(DATA_MARK, text, 1)


def create_app(
    data_dir: Path,
    cors: bool = False,
    allowed_hosts: list[str] | None = None,
    cache_mb: int = 256,
) -> Starlette:
    """The application serving ``data_dir`` (read only). ``allowed_hosts``: Host headers
    accepted (None: any; the command passes the loopback names when it binds to loopback, so
    a web page elsewhere cannot reach the server through a DNS name pointing at 127.0.0.1)."""
    positions = Positions(Path(data_dir), cache_mb=cache_mb)
    page = template()
    if page.count(DATA_MARK) != 1:
        raise PipelineError(f"the serve template lacks its data mark {DATA_MARK!r}")

    def headers() -> dict[str, str]:
        out = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
        if cors:
            out["Access-Control-Allow-Origin"] = "*"
        return out

    def answer(request: Request, kind: str, compute: Any) -> Response:
        """Run ``compute`` (JSON) and send it as JSON or inside the page."""
        try:
            if len(request.url.query) > MAX_QUERY:
                raise UsageError(f"query string longer than {MAX_QUERY} characters")
            params = dict(request.query_params)
            if len(params) != len(request.query_params.multi_items()):
                raise UsageError("a parameter is given twice")
            data, status = compute(params), 200
        except Exception as exc:  # every error is one line, never a traceback
            status = status_of(exc)
            if status == 500:
                log.exception("internal error on %s", request.url.path)
            data = {"error": one_line(exc), "status": status}
        if kind == "json":
            body = json.dumps(data, separators=(",", ":"), allow_nan=False)
            return Response(body, status, media_type="application/json", headers=headers())
        payload = {"page": request.url.path, "data": data}
        return HTMLResponse(render(payload), status, headers=headers())

    def split(request: Request) -> tuple[str, str]:
        """(name, kind) of a path part: ``x.json`` is (x, json), ``x`` is (x, html)."""
        raw = request.path_params.get("variant", "")
        if raw.endswith(".json"):
            return raw[: -len(".json")], "json"
        return raw, "html"

    def index(request: Request) -> Response:
        kind = "json" if request.url.path == "/.json" else "html"

        def compute(params: dict[str, str]) -> dict[str, Any]:
            if params:
                raise UsageError("the index takes no parameters")
            return positions.index()

        return answer(request, kind, compute)

    def variant(request: Request) -> Response:
        name, kind = split(request)

        def compute(params: dict[str, str]) -> dict[str, Any]:
            if params:
                raise UsageError("a variant's page takes no parameters (see /NAME/position)")
            return {"variant": positions.describe(name), "index": positions.index()}

        return answer(request, kind, compute)

    async def position(request: Request) -> Response:
        name = request.path_params["variant"]
        if positions.in_memory(name):  # no I/O: answer on the event loop, no thread hop
            return answer(
                request,
                "json" if request.url.path.endswith(".json") else "html",
                lambda params: compute_position(request, name, params),
            )
        return await run_in_threadpool(
            answer, request, "json" if request.url.path.endswith(".json") else "html",
            lambda params: compute_position(request, name, params),
        )  # fmt: skip

    def compute_position(request: Request, name: str, params: dict[str, str]) -> dict[str, Any]:
        found = positions.position(name, params)
        if not request.url.path.endswith(".json"):  # the page also draws the form and the list
            return {**found, "variant_info": positions.describe(name), "index": positions.index()}
        return found

    def other(request: Request) -> Response:
        def compute(params: dict[str, str]) -> dict[str, Any]:
            shown = request.url.path[:60]
            raise UsageError(f"{shown!r} is not a page of this server (see / for the variants)")

        kind = "json" if request.url.path.endswith(".json") else "html"
        return answer(request, kind, compute)

    routes = [
        Route("/", index),
        Route("/.json", index),
        Route("/{variant}/position", position),
        Route("/{variant}/position.json", position),
        Route("/{variant}", variant),
        Route("/{path:path}", other),
    ]
    middleware = (
        [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)] if allowed_hosts else []
    )
    app = Starlette(routes=routes, middleware=middleware)
    app.state.positions = positions
    return app


def serve(
    data_dir: Path,
    host: str,
    port: int,
    cors: bool = False,
    cache_mb: int = 256,
    ready: Any = None,
) -> None:
    """Run the server until Ctrl-C (or SIGTERM); returns after a clean shutdown."""
    import uvicorn

    loopback = host in ("127.0.0.1", "localhost", "::1")
    hosts = ["127.0.0.1", "localhost", "[::1]", "::1"] if loopback else None
    if hosts is not None:
        hosts = [*hosts, f"127.0.0.1:{port}", f"localhost:{port}"]
    app = create_app(data_dir, cors=cors, allowed_hosts=hosts, cache_mb=cache_mb)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    if ready is not None:
        ready(f"http://{'[' + host + ']' if ':' in host else host}:{port}/")
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled
        server.run()
    if not server.started:
        raise PipelineError(f"cannot listen on {host}:{port} (in use, or not an address here)")
