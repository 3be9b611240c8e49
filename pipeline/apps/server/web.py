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
and a link restores what it showed. Errors are one line, ``{"error": ..., "status": ...}`` on a
``.json`` path (the page shows the same line elsewhere), whatever answers them: 400 for a bad
request (unknown parameter, an empty one, malformed tiles or board, a number out of range, a
path that is no page, a Host header that is not this machine's when it listens on loopback),
404 for a variant that no family knows or that is not built, 405 for a method other than GET
or HEAD, 503 for a table that cannot be read (a damaged variant is named as such, never "not
built") or a full search queue (with ``Retry-After``); never a traceback.

Where each answer is computed: from value arrays already read, on the event loop (no I/O); the
other table lookups in the thread pool (DuckDB releases the GIL); a Knucklebones board without
tables, searched, in the search processes of :mod:`pipeline.apps.server.searches`, so that a
search never holds up a lookup. :func:`serve` runs one server process, or ``workers`` of them
sharing one listening socket (uvicorn's supervisor), each with its own tables in memory and its
own search processes.

A position's ``.json`` twin, nearly every request a client sends, is answered before starlette's
middleware and routing (:class:`ServerApp`): the same :func:`outcome` and bytes as its route
(a test holds them equal, errors included), without the request and response objects that cost
about as much as the answer itself; every other request, and one whose Host is refused, goes
through starlette. Its answers are kept (:mod:`pipeline.apps.server.sent`): a position asked
again is sent again without being answered again, until the data directory changes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.apps.server.positions import Positions
from pipeline.apps.server.searches import DEFAULT_WORKERS, Busy, SearchPool
from pipeline.apps.server.sent import DEFAULT_MB as ANSWER_CACHE_MB
from pipeline.apps.server.sent import SentAnswers
from pipeline.errors import (
    PipelineError,
    TableError,
    TablesMissingError,
    UnknownVariantError,
    UsageError,
)

#: The longest query string accepted (a 24-tile position with its fields is about 100 bytes).
MAX_QUERY = 1000
#: Parameters whose empty value is a value: ``tiles=`` is the box with every tile shut. Any other
#: parameter given empty (``roll=``, ``die=``) is a 400, not taken as absent.
EMPTY_IS_A_VALUE = frozenset({"tiles"})
#: The Host names a server listening on loopback answers (a web page elsewhere cannot then reach
#: it through a DNS name that points at 127.0.0.1).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
#: The environment variable carrying the settings to each server process of ``--workers N``.
SETTINGS_ENV = "STB_SERVE_SETTINGS"
#: Where the page's data goes in the template.
DATA_MARK = "/*SERVE_DATA*/null"
TEMPLATE = "serve.html"
#: The end of a position's JSON path, ``/{variant}/position.json``.
POSITION_JSON = "/position.json"
#: What an answer comes to before it is sent: its data, the status, any extra header.
Outcome = tuple[dict[str, Any], int, Mapping[str, str] | None]
log = logging.getLogger("stb-pipeline.serve")


def status_of(exc: Exception) -> int:
    """The HTTP status of an error: the user's (400), no such variant or not built (404), the
    tables' or a full search queue (503)."""
    if isinstance(exc, UnknownVariantError | TablesMissingError):
        return 404  # no such page: a variant no family knows, or one not built
    if isinstance(exc, TableError | Busy):
        return 503
    if isinstance(exc, PipelineError):  # a UsageError among them
        return 400
    return 500


def one_line(exc: Exception) -> str:
    """The error as the one line the CLI would print (never a traceback)."""
    internal = "internal error; the server log has the details"
    text = str(exc) if isinstance(exc, PipelineError) else internal
    return (text.splitlines() or ["error"])[0]


def template() -> str:
    """The page (package data: pipeline/templates/serve.html)."""
    return resources.files("pipeline").joinpath("templates", TEMPLATE).read_text("utf-8")


def render(data: dict[str, Any]) -> str:
    """The page with ``data`` embedded in its script ("<" escaped so no text can end it)."""
    text = json_body(data).decode().replace("<", "\\u003c")
    return template().replace(DATA_MARK, text, 1)


def json_body(data: dict[str, Any]) -> bytes:
    """An answer's JSON, compact (orjson, part of the ``serve`` extra: a tenth of the
    standard library's time, whose float formatting was a fifth of a fresh answer's CPU);
    ValueError for a NaN or an infinity, which JSON cannot hold (orjson would write null): a
    value the tables lack is an error, not a number that reads as missing."""
    body = orjson.dumps(data)
    # orjson writes a NaN or an infinity as null: only an answer with a null can hold one
    if b"null" in body and not _finite(data):
        raise ValueError("a NaN or an infinity is not JSON (a value the tables lack)")
    return body


def _finite(data: Any) -> bool:
    """Whether every float in ``data`` (dicts, lists, tuples of JSON's values) is finite."""
    todo = [data]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)
        elif isinstance(item, float) and item - item != 0.0:  # NaN and ±inf give NaN
            return False
    return True


def parse(query: str) -> dict[str, str]:
    """The parameters of a query string (starlette's reading of it: ``+`` and ``%xx``
    decoded, blank values kept); UsageError for a query too long, a parameter given twice, or
    one given empty (other than :data:`EMPTY_IS_A_VALUE`)."""
    if len(query) > MAX_QUERY:
        raise UsageError(f"query string longer than {MAX_QUERY} characters")
    pairs = parse_qsl(query, keep_blank_values=True)
    params = dict(pairs)
    if len(params) != len(pairs):
        raise UsageError("a parameter is given twice")
    empty = sorted(k for k, v in params.items() if v == "" and k not in EMPTY_IS_A_VALUE)
    if empty:
        raise UsageError(f"parameter {empty[0][:40]!r} is empty: give it a value or leave it out")
    return params


def host_name(header: str | None) -> str | None:
    """The host of a Host header, without its port (``[::1]:8025`` -> ``[::1]``); None when
    the header is missing or malformed."""
    if not header:
        return None
    value = header.strip().lower()
    if value.startswith("["):  # an IPv6 address
        end = value.find("]")
        rest = value[end + 1 :] if end > 0 else "x"
        if rest and not (rest[:1] == ":" and rest[1:].isdigit()):
            return None
        return value[: end + 1]
    name, colon, port = value.partition(":")
    if colon and not port.isdigit():
        return value if value == "::1" else None
    return name or None


def variant_data(positions: Positions, name: str, params: Mapping[str, str]) -> dict[str, Any]:
    """A variant's page: what the page needs to draw it, and the list of variants."""
    if params:
        raise UsageError("a variant's page takes no parameters (see /NAME/position)")
    return {"variant": positions.describe(name), "index": positions.index()}


def position_data(
    positions: Positions, name: str, params: Mapping[str, str], page: bool
) -> dict[str, Any]:
    """One position's answer; for the page (``page``) also what draws its form and list."""
    found = positions.position(name, params)
    if page:
        return {**found, "variant_info": positions.describe(name), "index": positions.index()}
    return found


class HostGuard:
    """Refuses a request whose Host header is not one of ``allowed`` with the server's own
    one-line 400 (``respond``: JSON on a ``.json`` path, the page elsewhere)."""

    def __init__(self, app: ASGIApp, allowed: list[str], respond: Callable[..., Response]) -> None:
        self.app = app
        self.allowed = {h.lower() for h in allowed}
        self.respond = respond

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = Headers(scope=scope).get("host")
            if host_name(given) not in self.allowed:
                shown = "no Host header" if not given else f"Host {given[:60]!r}"
                message = (
                    f"{shown} is not this machine: the server listens on loopback and answers "
                    f"requests for {', '.join(sorted(self.allowed))} only"
                )
                await self.respond(scope["path"], 400, message)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class ServerApp(Starlette):
    """Starlette with one path first: ``fast(scope, send)`` answers the requests it knows
    (True) before the middleware and routing; starlette answers the others."""

    def __init__(self, fast: Callable[[Scope, Send], Awaitable[bool]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fast = fast

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and await self.fast(scope, send):
            return
        await super().__call__(scope, receive, send)


class Handlers:
    """The server's answers to requests over one data directory (its :class:`Positions` and
    search processes), as the page or its ``.json`` twin; every error is one line."""

    def __init__(
        self,
        positions: Positions,
        searches: SearchPool,
        cors: bool,
        allowed: set[str] | None,
        answer_cache_mb: float = ANSWER_CACHE_MB,
    ) -> None:
        self.positions, self.searches, self.cors, self.allowed = positions, searches, cors, allowed
        self.directory = positions.answers.directory
        self.sent = SentAnswers(int(answer_cache_mb * 2**20))
        self.json_headers = [(k.lower().encode(), v.encode()) for k, v in self.headers().items()]
        self.json_headers.append((b"content-type", b"application/json"))

    def headers(self) -> dict[str, str]:
        out = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
        if self.cors:
            out["Access-Control-Allow-Origin"] = "*"
        return out

    def reply(
        self, path: str, data: dict[str, Any], status: int = 200,
        extra: Mapping[str, str] | None = None,
    ) -> Response:  # fmt: skip
        """``data`` as JSON on a ``.json`` path, else inside the page."""
        sent = {**self.headers(), **(extra or {})}
        if path.endswith(".json"):  # a .json twin: its answers, errors included, are JSON
            return Response(json_body(data), status, media_type="application/json", headers=sent)
        return HTMLResponse(render({"page": path, "data": data}), status, headers=sent)

    @staticmethod
    def failed(path: str, exc: Exception) -> Outcome:
        """The one-line answer to an error (never a traceback; an internal one is logged)."""
        status = status_of(exc)
        if status == 500:
            log.error("internal error on %s", path, exc_info=exc)
        extra = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Busy) else None
        return {"error": one_line(exc), "status": status}, status, extra

    def error_reply(self, path: str, status: int, message: str) -> Response:
        return self.reply(path, {"error": message, "status": status}, status)

    def answer(
        self, request: Request, compute: Callable[[dict[str, str]], dict[str, Any]]
    ) -> Response:
        """Run ``compute(params)`` here and send what it returns (or its error)."""
        try:
            return self.reply(request.url.path, compute(parse(request.url.query)))
        except Exception as exc:  # every error is one line, never a traceback
            return self.reply(request.url.path, *self.failed(request.url.path, exc))

    async def outcome(
        self, path: str, query: str, name: str, fn: Callable[..., Any], *args: Any
    ) -> Outcome:
        """``fn(positions, name, params, *args)`` where it belongs: a search in the search
        processes, a position from arrays already read on the event loop (no I/O), anything
        else in the thread pool; its data, or its error's, with the status and any header."""
        positions = self.positions
        try:
            params = parse(query)
            if positions.searched(name):
                data = await self.searches.run(fn, name, params, *args)
            elif fn is position_data and positions.in_memory(name):
                data = fn(positions, name, params, *args)
            else:
                data = await run_in_threadpool(fn, positions, name, params, *args)
            return data, 200, None
        except Exception as exc:  # every error is one line, never a traceback
            return self.failed(path, exc)

    async def answer_for(
        self, request: Request, name: str, fn: Callable[..., Any], *args: Any
    ) -> Response:
        """:meth:`outcome` of a request, as the page or its JSON."""
        path = request.url.path
        return self.reply(path, *await self.outcome(path, request.url.query, name, fn, *args))

    async def position_json(self, scope: Scope, send: Send) -> bool:
        """A position's ``.json`` twin sent straight (what nearly every request is): the same
        :meth:`outcome` and JSON as through starlette, without its routing, request and
        response objects (about a third of a lookup's CPU in the server went there); False for
        a request it leaves to starlette (another path or method, a Host to check and refuse)."""
        path = scope["path"]
        if scope["method"] != "GET" or not path.endswith(POSITION_JSON):
            return False
        name = path[1 : -len(POSITION_JSON)]
        if not name or "/" in name:
            return False
        if self.allowed is not None:
            host = next((v for k, v in scope["headers"] if k == b"host"), None)
            if host is None or host_name(host.decode("latin-1")) not in self.allowed:
                return False  # HostGuard answers it, with its one line
        raw = scope["query_string"]
        key, look = (path, raw), self.directory.look()
        body = self.sent.get(key, look)
        if body is None:
            status, body, extra = await self.position_bytes(path, raw.decode("latin-1"), name)
            if status == 200 and not extra:
                self.sent.put(key, look, body)
        else:
            status, extra = 200, None
        sent = [(b"content-length", str(len(body)).encode()), *self.json_headers]
        if extra:
            sent += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": sent})
        await send({"type": "http.response.body", "body": body})
        return True

    async def position_bytes(
        self, path: str, query: str, name: str
    ) -> tuple[int, bytes, Mapping[str, str] | None]:
        """A position's ``.json`` answer as it is sent: status, body, any extra header."""
        data, status, extra = await self.outcome(path, query, name, position_data, False)
        try:
            body = json_body(data)
        except ValueError as exc:  # a NaN: one line too, as starlette's handler would send
            data, status, extra = self.failed(path, exc)
            body = json_body(data)
        return status, body, extra

    def index(self, request: Request) -> Response:
        def compute(params: dict[str, str]) -> dict[str, Any]:
            if params:
                raise UsageError("the index takes no parameters")
            return self.positions.index()

        return self.answer(request, compute)

    async def variant(self, request: Request) -> Response:
        raw = request.path_params.get("variant", "")  # x.json: the JSON of variant x
        return await self.answer_for(request, raw.removesuffix(".json"), variant_data)

    async def position(self, request: Request) -> Response:
        name = request.path_params["variant"]
        page = not request.url.path.endswith(".json")
        return await self.answer_for(request, name, position_data, page)

    def other(self, request: Request) -> Response:
        def compute(params: dict[str, str]) -> dict[str, Any]:
            shown = request.url.path[:60]
            raise UsageError(f"{shown!r} is not a page of this server (see / for the variants)")

        return self.answer(request, compute)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """Starlette's own errors (405 for a method other than GET or HEAD) answered as ours."""
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            message = f"method {request.method[:20]} is not allowed: this server only reads (GET)"
        else:
            message = (str(exc.detail).splitlines() or ["error"])[0]
        response = self.error_reply(request.url.path, exc.status_code, message)
        response.headers.update(exc.headers or {})
        return response

    async def internal_error(self, request: Request, exc: Exception) -> Response:
        """An error outside the answers (starlette logs its traceback): one line too."""
        return self.error_reply(request.url.path, 500, one_line(exc))

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        watched = self.positions.answers.directory
        watched.watch()  # the files looked at off the request path (a rebuild: within a second)
        try:
            yield
        finally:
            watched.unwatch()
            await run_in_threadpool(self.searches.close)  # a running search is finished first


def create_app(
    data_dir: Path | str,
    cors: bool = False,
    allowed_hosts: list[str] | None = None,
    cache_mb: int = 256,
    search_workers: int = DEFAULT_WORKERS,
    search_queue: int | None = None,
    answer_cache_mb: float = ANSWER_CACHE_MB,
) -> Starlette:
    """The application serving ``data_dir`` (read only). ``allowed_hosts``: Host headers
    accepted (None: any; the command passes the loopback names when it binds to loopback, so
    a web page elsewhere cannot reach the server through a DNS name pointing at 127.0.0.1).
    ``search_workers`` and ``search_queue``: the processes for Knucklebones searches and the
    searches they take at once (:class:`~pipeline.apps.server.searches.SearchPool`).
    ``answer_cache_mb``: the memory for answers sent, sent again when asked again (0: none;
    :mod:`pipeline.apps.server.sent`)."""
    positions = Positions(Path(data_dir), cache_mb=cache_mb)
    searches = SearchPool(
        Path(data_dir), workers=search_workers, queue=search_queue, cache_mb=cache_mb
    )
    if template().count(DATA_MARK) != 1:
        raise PipelineError(f"the serve template lacks its data mark {DATA_MARK!r}")
    allowed = {h.lower() for h in allowed_hosts} if allowed_hosts else None
    h = Handlers(positions, searches, cors, allowed, answer_cache_mb)
    routes = [
        Route("/", h.index),
        Route("/.json", h.index),
        Route("/{variant}/position", h.position),
        Route("/{variant}/position.json", h.position),
        Route("/{variant}", h.variant),
        Route("/{path:path}", h.other),
    ]
    guard = Middleware(HostGuard, allowed=allowed_hosts or [], respond=h.error_reply)
    app = ServerApp(
        h.position_json,
        routes=routes,
        middleware=[guard] if allowed_hosts else [],
        exception_handlers={HTTPException: h.http_error, Exception: h.internal_error},
        lifespan=h.lifespan,
    )
    app.state.positions = positions
    app.state.searches = searches
    app.state.handlers = h
    return app


def app_from_environment() -> Starlette:
    """The application of one server process of ``serve --workers N`` (uvicorn's factory):
    its settings come from :data:`SETTINGS_ENV`, set by :func:`serve` before the processes
    start."""
    return create_app(**json.loads(os.environ[SETTINGS_ENV]))


def loopback_hosts(host: str) -> list[str] | None:
    """The Host names to accept when listening on ``host`` (None: any, off loopback)."""
    return list(LOOPBACK_HOSTS) if address(host) in LOOPBACK_HOSTS else None


def address(host: str) -> str:
    """The address to listen on that ``--host`` names, without the brackets of an IPv6 address
    (``[::1]`` -> ``::1``). UsageError for an empty one: the socket would take it for every
    interface, opening the server to the network unasked."""
    bare = host.strip()
    if bare.startswith("[") and bare.endswith("]"):
        bare = bare[1:-1].strip()
    if not bare:
        raise UsageError(
            f"--host {host!r} names no address: give 127.0.0.1 (this machine only, the "
            "default) or, to open the server to the network, 0.0.0.0"
        )
    return bare


def url_of(host: str, port: int) -> str:
    """The address a browser opens: ``http://127.0.0.1:8025/``, ``http://[::1]:8025/``."""
    bare = address(host)
    return f"http://{'[' + bare + ']' if ':' in bare else bare}:{port}/"


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one clear line (every server
    process of ``--workers N`` accepts from it)."""
    bare = address(host)
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bare, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        why = exc.strerror or str(exc)
        raise PipelineError(f"cannot listen on {url_of(host, port)} ({why})") from None
    sock.set_inheritable(True)
    return sock


def serve(
    data_dir: Path,
    host: str,
    port: int,
    cors: bool = False,
    cache_mb: int = 256,
    ready: Any = None,
    workers: int = 1,
    search_workers: int = DEFAULT_WORKERS,
    search_queue: int | None = None,
    answer_cache_mb: float = ANSWER_CACHE_MB,
) -> None:
    """Run the server until Ctrl-C (or SIGTERM); returns after a clean shutdown. ``workers``
    server processes share the listening socket (each with its own tables in memory and
    ``search_workers`` search processes)."""
    import uvicorn

    # what create_app serves and how, JSON-able: it travels to each server process
    settings: dict[str, Any] = {
        "data_dir": str(Path(data_dir).resolve()),
        "cors": cors,
        "allowed_hosts": loopback_hosts(host),
        "cache_mb": cache_mb,
        "search_workers": search_workers,
        "search_queue": search_queue,
        "answer_cache_mb": answer_cache_mb,
    }
    url = url_of(host, port)  # an empty host is refused before any socket is opened
    sock = listen(host, port)
    # no proxy in front of a local server: uvicorn's middleware for X-Forwarded-* headers would
    # cost every request a layer (a tenth of what uvicorn spends on one); nor a Server header
    common = {
        "log_level": "warning", "access_log": False, "lifespan": "on",
        "proxy_headers": False, "server_header": False,
    }  # fmt: skip
    try:
        if workers <= 1:
            app = create_app(**settings)
            server = uvicorn.Server(uvicorn.Config(app, **common))  # type: ignore[arg-type]
            if ready is not None:
                ready(url)
            with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C
                server.run(sockets=[sock])
            if not server.started:
                raise PipelineError(f"the server on {host}:{port} did not start (see above)")
            return
        from uvicorn.supervisors import Multiprocess

        os.environ[SETTINGS_ENV] = json.dumps(settings)
        config = uvicorn.Config(
            f"{__name__}:app_from_environment", factory=True, workers=workers,
            **common,  # type: ignore[arg-type]
        )  # fmt: skip
        if ready is not None:
            ready(url)
        with contextlib.suppress(KeyboardInterrupt):
            Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
