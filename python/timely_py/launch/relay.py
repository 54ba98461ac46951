"""The relay of the processes' output to the launcher's own streams.

This module owns `Sink` (one of the launcher's streams, shared by threads, whole writes under
one lock) and `relay` (copies one pipe to a sink, whole lines, each prefixed ``[i] ``). It
must not know which process a pipe belongs to beyond its prefix, nor stop anything.
"""

from __future__ import annotations

import codecs
import threading
from typing import IO, TextIO

__all__ = ["MAX_LINE", "Sink", "relay"]

#: A line longer than this many characters is relayed in pieces, each as a line of its own.
MAX_LINE = 1 << 20
_TAG = "[launch] "


class Sink:
    """One of the launcher's text streams, shared by threads: each write is whole, under a
    lock shared by both streams; a stream that broke (a closed pipe) silently drops output,
    so the children never block on a full pipe."""

    def __init__(self, stream: TextIO, lock: threading.Lock) -> None:
        self._stream = stream
        self._lock = lock
        self._broken = False

    def write(self, text: str) -> None:
        """Writes `text` and flushes."""
        with self._lock:
            if self._broken:
                return
            try:
                self._write(text)
            except (OSError, ValueError):
                self._broken = True

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(self._stream, "encoding", None) or "ascii"
            self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        self._stream.flush()

    def say(self, message: str) -> None:
        """Writes one of the launcher's own messages."""
        self.write(f"{_TAG}{message}\n")


def relay(pipe: IO[bytes], prefix: str, sink: Sink) -> None:
    """Copies `pipe` to `sink` until its end, whole lines at a time, each prefixed."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    with pipe:
        while True:
            try:
                chunk = pipe.read(1 << 16)
            except OSError:
                chunk = b""
            lines = (pending + decoder.decode(chunk or b"", final=not chunk)).split("\n")
            pending = lines.pop()
            if len(pending) >= MAX_LINE:
                lines.append(pending)
                pending = ""
            if lines:
                sink.write("".join(f"{prefix}{line}\n" for line in lines))
            if not chunk:
                break
    if pending:
        sink.write(f"{prefix}{pending}\n")
