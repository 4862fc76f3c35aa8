"""The store's seam: a writer (rows, session metadata, the lease) and a reader, as two narrow protocols.

A store holds many sessions: out-of-log metadata rows and each session's append-only events. The
layers above talk to these protocols only, the way an HTTP client talks to its transport; the
backends behind them are the SQLite file (:mod:`nbagent.store.sqlite.store`) and PostgreSQL
(:mod:`nbagent.store.postgres.store`), chosen by :func:`nbagent.store.opening.open_store` from a
location. The reads and checks both backends share live above them (:mod:`nbagent.store.checked_reads`);
a backend supplies its SQL and its fetching. Every failure is one of nbagent's errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from nbagent.log.events import Event

if TYPE_CHECKING:
    from nbagent.store.location import StoreLocation


class EventRow(NamedTuple):
    """One event as stored; ``data`` is its JSON text exactly as written."""

    session_id: str
    seq: int
    time: int
    type: str
    data: str
    inbox_pending: int | None
    """The number of pending messages after a splice (``None`` for other events)."""


class StoredSession(NamedTuple):
    """A ``sessions`` row as stored (``metadata`` its JSON text): what :meth:`StoreWriter.write` creates."""

    id: str
    created_at: int
    """When it was opened (Unix ms); with ``id``, what tells two sessions apart when copying."""
    title: str | None
    parent: str | None
    notebook: str | None
    model: str | None
    metadata: str


Row = tuple[str, int, int, str, str, "int | None"]
"""An event row as the journal stages it: :class:`EventRow`'s fields, in its order (a plain tuple
on the write path, where every microsecond of a commit counts)."""

Mode = Literal["create", "write", "read"]
"""``create``: open for writing, initialising an empty or missing file; ``write``: open an
existing file for writing; ``read``: strictly read-only (creates and changes nothing)."""


class Releasable(Protocol):
    """A session's one-writer lease (a file lock, or a PostgreSQL advisory lock)."""

    def release(self) -> None: ...


@dataclass(frozen=True)
class SessionRow:
    """Out-of-log metadata of one session, plus a few figures read from its log."""

    id: str
    created_at: int
    title: str | None
    parent: str | None
    notebook: str | None
    model: str | None
    metadata: dict[str, Any]
    events: int = 0
    turns: int = 0
    last_activity: int | None = None
    file: str | None = None
    """Where the session lives (the file's path)."""

    @property
    def last_time(self) -> int | None:
        """The time of the last event (Unix ms), or ``None`` for a session without events."""
        return self.last_activity


class StoreReader(Protocol):
    """A read-only connection to a store: what listing, reading, following and resuming use."""

    @property
    def where(self) -> StoreLocation:
        """The location it was opened from (a PostgreSQL URL keeps its credentials: never show it)."""

    location: str
    """The path or address, as error messages and ``SessionRow.file`` show it."""

    def session_row(self, session_id: str) -> SessionRow | None: ...

    def sessions(self) -> list[SessionRow]:
        """Every session, most recent activity first."""

    def tail(self, session_id: str) -> tuple[int, int]:
        """``(event count, time of the last event)`` from the last row alone (no scan)."""

    def check_log(self, session_id: str) -> tuple[int, int]:
        """Validate the log cheaply (continuous seq, every row valid JSON); ``(count, last time)``.

        Raises :class:`~nbagent.errors.SessionCorruptError` naming the first bad seq."""

    def checks_may_wait(self, session_id: str) -> bool:
        """Whether the resume checks beyond :meth:`check_log` may wait for the writer's first write."""

    def last_of_type(self, session_id: str, type_: str) -> Event | None: ...

    def last_quiet_inbox(self, session_id: str) -> int:
        """The seq of the last splice after which both queues were empty (-1 if none)."""

    def events(
        self,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """Events with ``start <= seq < stop`` (optionally of ``types``, at most ``limit``), in order."""

    def raw_rows(self, session_id: str, *, start: int = 0, limit: int | None = None) -> list[EventRow]:
        """Stored rows exactly as written (``data`` as its stored text), in seq order."""

    def session_tuple(self, session_id: str) -> StoredSession | None:
        """The stored ``sessions`` row as written (the ``session=`` argument of :meth:`StoreWriter.write`)."""

    def close(self, *, checkpoint: bool = True) -> None: ...


class StoreWriter(Protocol):
    """The one writer of a session: appends rows, updates metadata, holds the lease.

    Writers are single-threaded per agent (the journal's leader)."""

    @property
    def where(self) -> StoreLocation: ...

    location: str

    @property
    def path(self) -> Path | str:
        """``agent.path``: the file's path, or (PostgreSQL) the address without credentials."""

    def write(self, rows: Sequence[Row], *, session: StoredSession | None = None) -> None:
        """Insert ``rows`` (and optionally a new session row) atomically: all or nothing.

        Raises :class:`~nbagent.errors.SessionWriteError` (nothing recorded) on failure."""

    def update_session(self, session_id: str, **fields: Any) -> None: ...

    def lease(self, session_id: str) -> Releasable:
        """Take the session's one-writer lease (:class:`~nbagent.errors.SessionLockedError`)."""

    def copy_within(self, parent: str, stop: int, session: StoredSession, own: Sequence[EventRow]) -> None:
        """Create ``session`` holding ``parent``'s rows with ``seq <= stop`` (copied by the database
        itself) and then ``own``, all or nothing: a fork within this store."""

    def delete_session(self, session_id: str) -> None:
        """Delete the session's row and its whole log, all or nothing (under its lease)."""

    def check_before_first_write(self, session_id: str) -> None:
        """Owe a resumed session the checks :meth:`StoreReader.checks_may_wait` let wait."""

    def reader(self) -> StoreReader:
        """Another, read-only connection to the same store (lazy reads never share the writer's)."""

    def close(self, *, checkpoint: bool = True) -> None:
        """Close; a writer's clean close leaves the whole log in the main store (WAL checkpointed).
        ``checkpoint=False`` writes nothing more (closing after a failed open)."""


class SessionStore(StoreWriter, StoreReader, Protocol):
    """A writer that also reads its own log (resuming, forking): what ``open_store`` gives to write."""
