"""`stb-pipeline serve`: a local, read-only web server over the solved tables.

:mod:`pipeline.apps.server.catalog` finds what a data directory holds (and what it does not),
:mod:`pipeline.apps.server.positions` answers one position of any family (DuckDB over the
tables, value arrays for the big variants stored on their own, the Knucklebones search where no
table is built), and :mod:`pipeline.apps.server.web` serves the page and its JSON API (starlette
and uvicorn, the optional extra ``pip install '.[serve]'``). Only ``web`` imports them, so the
rest is usable, and tested, without the extra.
"""

#: Where the server listens unless told otherwise: this machine only.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8025
#: What to install when starlette or uvicorn is missing.
INSTALL_HINT = "pip install 'stb-pipeline[serve]' (from a checkout: pip install '.[serve]')"
