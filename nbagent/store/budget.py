"""Bounds on the work one read request may do (the lab server's), so a crafted file cannot take
minutes of CPU, gigabytes of memory or a 200 MB answer.

A :class:`Budget` is installed for the duration of a request with :func:`bounded`; every
read-only SQLite connection opened meanwhile applies it: SQLite's length limit (a longer record
is refused), a progress handler (a cap on SQLite's steps over the whole request), a cap on the
bytes of records read, and on how deeply a record may nest. A page read may instead stop early
(``page_bytes``/``page_events``), which callers that page (``after=``) simply continue.
Library reads (kernels, the CLI) run without a budget.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from nbagent.errors import SessionFileError

SQLITE_LIMIT_LENGTH = getattr(sqlite3, "SQLITE_LIMIT_LENGTH", 0)
PROGRESS_EVERY = 10_000
"""SQLite virtual-machine steps between two calls of the progress handler."""


def size_text(n: int) -> str:
    """``32 MB`` for whole megabytes, else ``1,000 bytes``."""
    return f"{n >> 20} MB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n:,} bytes"


class ReadLimitError(SessionFileError):
    """A read needed more than its request may use; the message names the path and the bound."""


@dataclass
class Budget:
    """What one request may read; counters are shared by every connection it opens."""

    max_record: int = 32 << 20
    """The largest record (bytes) SQLite hands back (``SQLITE_LIMIT_LENGTH``)."""
    max_steps: int = 100_000_000
    """SQLite steps over the whole request (a progress handler interrupts beyond)."""
    max_bytes: int = 128 << 20
    """Bytes of records read over the whole request."""
    max_events: int | None = None
    """Events read over the whole request (``None``: unbounded)."""
    max_copy: int = 256 << 20
    """Bytes of a session file and its ``-wal`` a read may copy to read a log a stopped writer left."""
    max_depth: int = 240
    """How deeply a record may nest (nbagent writes at most ~205 levels: SPEC §2.1 plus envelopes)."""
    page_bytes: int | None = None
    """A page read stops early (at least one event) once it holds this many bytes."""
    page_events: int | None = None
    """A page read stops early once it holds this many events."""
    steps: int = field(default=0, init=False)
    bytes: int = field(default=0, init=False)
    events: int = field(default=0, init=False)

    def apply(self, conn: sqlite3.Connection) -> None:
        """Bound ``conn``: the length limit and the shared step counter."""
        if hasattr(conn, "setlimit"):  # Python 3.11+; 3.10 relies on the byte count alone
            conn.setlimit(SQLITE_LIMIT_LENGTH, self.max_record)
        conn.set_progress_handler(self._progress, PROGRESS_EVERY)

    def _progress(self) -> int:
        self.steps += PROGRESS_EVERY
        return int(self.steps > self.max_steps)

    def spend(self, where: str, size: int) -> None:
        """Count one record of ``size`` bytes read from ``where``; raise beyond the request's bounds."""
        self.bytes += size
        self.events += 1
        if self.bytes > self.max_bytes:
            raise ReadLimitError(
                f"reading {where} needs more than the {size_text(self.max_bytes)} of records one request "
                "may read; read it in pages (after=SEQ), or outside the server (nbagent transcript PATH)"
            )
        if self.max_events is not None and self.events > self.max_events:
            raise ReadLimitError(
                f"reading {where} needs more than the {self.max_events} events one request may read; "
                "read it in pages (after=SEQ), or outside the server (nbagent transcript PATH)"
            )

    def full_page(self, events: int, size: int) -> bool:
        """Whether a page holding ``events`` events of ``size`` bytes should stop here."""
        return events > 0 and (
            (self.page_bytes is not None and size >= self.page_bytes)
            or (self.page_events is not None and events >= self.page_events)
        )

    def interrupted(self, where: str) -> ReadLimitError:
        """The error for a statement the progress handler interrupted."""
        return ReadLimitError(
            f"reading {where} took more than the {self.max_steps:,} SQLite steps one request may use "
            "(a very large or crafted file); read it outside the server (nbagent transcript PATH)"
        )

    def too_long(self, where: str) -> ReadLimitError:
        return ReadLimitError(
            f"{where} holds a record larger than the {size_text(self.max_record)} one request may read; "
            "read it outside the server (nbagent transcript PATH)"
        )


_current: ContextVar[Budget | None] = ContextVar("nbagent_read_budget", default=None)


def current() -> Budget | None:
    """The budget of the request this thread is serving, if any."""
    return _current.get()


@contextmanager
def bounded(budget: Budget) -> Iterator[Budget]:
    """Apply ``budget`` to every read made inside the ``with`` block (in this thread or task)."""
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
