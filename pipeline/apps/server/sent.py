"""Answers already sent, kept by request: a position asked again costs one dict lookup.

Most of a lookup's CPU in the server is the answer itself (the library's answer, its JSON): a
few hundred microseconds, against a few for a dict lookup. People ask the same positions again
and again (every game starts from the same box, a page is reloaded, a link is shared), so the
server keeps the bytes it sent for each request and sends them again.

What an answer depends on: the tables of the data directory (the models that ship with the
package do not change while the process runs). So the kept answers belong to one look at the
directory (:meth:`pipeline.store.directory.Directory.look`, the watcher's latest): when the
look changes (a rebuild, seen within a second), every kept answer is dropped, and an answer
computed while the look changed is not kept. Only successful answers are kept (an error may be
a table being replaced, or a full search queue), and only their bodies (the headers of a
successful answer are the server's own); bounded in bytes, the bodies kept compressed.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

#: The memory for kept answers (MB) unless told otherwise (``serve --answer-cache-mb``): some
#: 30,000 answers of 1 to 3 KB, kept compressed (about 2.6 times smaller, 10 microseconds to
#: open again: a fortieth of answering anew). The server's whole process grows about 25 MB
#: with them full, less than pyarrow took before footers were parsed by DuckDB; at 16 MB, the
#: 19,198 positions of issue 49's mix did not all fit, and answering the ones dropped again
#: cost a fifth of the server's CPU (docs/benchmarks.md).
DEFAULT_MB = 24
#: zlib's quickest level: most of the size for a fifth of the time of its default.
LEVEL = 1
#: What one kept answer costs beyond its compressed body and key (objects and dict slots).
OVERHEAD = 250
#: What a request is kept under: its path and raw query string.
Key = tuple[str, bytes]


def cost(key: Key, packed: bytes) -> int:
    """The memory one kept answer (its body compressed: ``packed``) takes, roughly."""
    return len(packed) + len(key[0]) + len(key[1]) + OVERHEAD


class SentAnswers:
    """The bodies of the answers sent for one look at the data directory, at most
    ``max_bytes`` of them (0 keeps none). Used from the server's event loop only: no lock.

    When full, a kept answer drawn at random makes room (seeded: the same requests keep the
    same answers): people asking many positions in turn, more than fit, then still find a
    share of them kept, where dropping the oldest first would keep none of a round that comes
    back in order; and a position asked often is kept again as soon as it is dropped."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._kept: dict[Key, bytes] = {}
        self._keys: list[Key] = []
        """The kept keys, in no order (a random one is dropped in constant time)."""
        self._bytes = 0
        """The memory the kept answers take (compressed), roughly."""
        self._look: Any = None
        self._random = random.Random(0)

    def get(self, key: Key, look: Any) -> bytes | None:
        """The body sent for ``key`` under ``look`` (None: not kept); a new look drops every
        kept answer."""
        if look is not self._look:
            self._kept.clear()
            self._keys.clear()
            self._bytes = 0
            self._look = look
            return None
        found = self._kept.get(key)
        return None if found is None else zlib.decompress(found)

    def put(self, key: Key, look: Any, body: bytes) -> None:
        """Keep ``body`` for ``key`` if it was computed under the current look and fits."""
        if look is not self._look or key in self._kept or not self.max_bytes:
            return
        packed = zlib.compress(body, LEVEL)
        size = cost(key, packed)
        if size > self.max_bytes:
            return
        while self._keys and self._bytes + size > self.max_bytes:
            self._drop(self._random.randrange(len(self._keys)))
        self._keys.append(key)
        self._kept[key] = packed
        self._bytes += size

    def _drop(self, i: int) -> None:
        keys = self._keys
        key = keys[i]
        last = keys.pop()
        if last is not key:  # the last key fills the hole
            keys[i] = last
        self._bytes -= cost(key, self._kept.pop(key))
