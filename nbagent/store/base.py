"""The store layer's narrow interface: what the journal, the session functions and readers need.

A store holds many sessions: out-of-log metadata rows and each session's append-only events.
The SQLite file beside the notebook (:mod:`nbagent.store.sqlite`) is the one implementation
today; another backend implements :class:`SessionStore` and is selected in :func:`open_store`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from nbagent.core.events import Event

if TYPE_CHECKING:
    from nbagent.store.lease import Lease
    from nbagent.store.location import StoreLocation

Row = tuple[str, int, int, str, str, "int | None"]
"""One event as stored: ``(session_id, seq, time, type, data JSON text, inbox_pending)``;
``inbox_pending`` is the number of pending messages after a splice (``None`` for other events)."""

Mode = Literal["create", "write", "read"]
"""``create``: open for writing, initialising an empty or missing file; ``write``: open an
existing file for writing; ``read``: strictly read-only (creates and changes nothing)."""


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


class SessionStore(Protocol):
    """One open connection to a store. Writers are single-threaded per agent (the journal's leader)."""

    where: StoreLocation
    """The location it was opened from (a PostgreSQL URL keeps its credentials: never show it)."""
    location: str
    """The path or address, as error messages and ``SessionRow.file`` show it."""
    path: Path | str
    """``agent.path``: the file's path, or (PostgreSQL) the address without credentials."""

    # -- writing (mode "create" / "write") ------------------------------------------------------
    def write(self, rows: Sequence[Row], *, session: tuple[Any, ...] | None = None) -> None:
        """Insert ``rows`` (and optionally a new session row) atomically: all or nothing.

        Raises :class:`~nbagent.errors.SessionWriteError` (nothing recorded) on failure."""

    def update_session(self, session_id: str, **fields: Any) -> None: ...

    def lease(self, session_id: str) -> Lease:
        """Take the session's one-writer lease (:class:`~nbagent.errors.SessionLockedError`)."""

    # -- reading --------------------------------------------------------------------------------
    def session_row(self, session_id: str) -> SessionRow | None: ...

    def sessions(self) -> list[SessionRow]:
        """Every session, most recent activity first."""

    def tail(self, session_id: str) -> tuple[int, int]:
        """``(event count, time of the last event)`` from the last row alone (no scan)."""

    def check_log(self, session_id: str) -> tuple[int, int]:
        """Validate the log cheaply (continuous seq, every row valid JSON); ``(count, last time)``.

        Raises :class:`~nbagent.errors.SessionCorruptError` naming the first bad seq."""

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

    def close(self, *, checkpoint: bool = True) -> None:
        """Close; a writer's clean close leaves the whole log in the main store (WAL checkpointed).
        ``checkpoint=False`` writes nothing more (closing after a failed open)."""

    # -- beside a writer, and for copying between stores ----------------------------------------
    def reader(self) -> SessionStore:
        """Another, read-only connection to the same store (lazy reads never share the writer's)."""

    def raw_rows(self, session_id: str, *, start: int = 0, limit: int | None = None) -> list[Row]:
        """Stored rows exactly as written (``data`` as its stored text), in seq order."""

    def session_tuple(self, session_id: str) -> tuple[Any, ...] | None:
        """The stored ``sessions`` row as written (the ``session=`` argument of :meth:`write`)."""
