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
a table being replaced, or a full search queue). Bounded in bytes; the oldest go first.
"""

from __future__ import annotations

from typing import Any

#: The memory for kept answers (MB) unless told otherwise (``serve --answer-cache-mb``): about
#: 6,000 answers of 2 to 3 KB.
DEFAULT_MB = 16
#: What one kept entry costs beyond its bytes (its key, tuple and dict slot), roughly.
OVERHEAD = 200
#: What a request is kept under: its path and raw query string.
Key = tuple[str, bytes]
#: What is sent again: the status, the headers and the body.
Sent = tuple[int, list[tuple[bytes, bytes]], bytes]


class SentAnswers:
    """The answers sent for one look at the data directory, at most ``max_bytes`` of them
    (0 keeps none). Used from the server's event loop only: no lock."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._kept: dict[Key, Sent] = {}
        self._bytes = 0
        self._look: Any = None

    def get(self, key: Key, look: Any) -> Sent | None:
        """The answer sent for ``key`` under ``look`` (None: not kept); a new look drops every
        kept answer."""
        if look is not self._look:
            self._kept.clear()
            self._bytes = 0
            self._look = look
            return None
        return self._kept.get(key)

    def put(self, key: Key, look: Any, sent: Sent) -> None:
        """Keep ``sent`` for ``key`` if it was computed under the current look and fits."""
        if look is not self._look or key in self._kept:
            return
        size = len(sent[2]) + len(key[0]) + len(key[1]) + OVERHEAD
        if size > self.max_bytes:
            return
        kept = self._kept
        while kept and self._bytes + size > self.max_bytes:
            old_key = next(iter(kept))  # the oldest: dicts keep their order of insertion
            old = kept.pop(old_key)
            self._bytes -= len(old[2]) + len(old_key[0]) + len(old_key[1]) + OVERHEAD
        kept[key] = sent
        self._bytes += size

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def bytes(self) -> int:
        """The memory the kept answers take, roughly."""
        return self._bytes
