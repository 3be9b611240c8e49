"""`stb-pipeline serve`: a local, read-only web server over the solved tables.

HTTP only: :mod:`pipeline.apps.server.positions` reads a request's parameters and asks the
library's one answer (:mod:`pipeline.answer`: what a data directory holds, every position of
any family from its values in memory, the Knucklebones search where no table is built), and
:mod:`pipeline.apps.server.web` serves the page and its JSON API (starlette, uvicorn and
orjson, the optional extra ``pip install '.[serve]'``). Only ``web`` imports them, so the rest
is usable, and tested, without the extra; no module here imports a game.
"""

#: Where the server listens unless told otherwise: this machine only.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8025
#: What to install when starlette, uvicorn or orjson is missing.
INSTALL_HINT = "pip install 'stb-pipeline[serve]' (from a checkout: pip install '.[serve]')"
#: The options of a position beyond its open tiles (`expect`, `move`; whole numbers) and the
#: request parameter each is: the console script's door reads them (:mod:`pipeline.cli.lean`),
#: and the server names parameters where the library's messages name options.
POSITION_OPTIONS = {
    f"--{name.replace('_', '-')}": name
    for name in ("p1_score", "player", "best_score", "best_count")
}
