"""The reads both backends share, and the checks on them (SPEC §6.3), written once above both.

:class:`CheckedReads` implements :class:`~nbagent.store.base.StoreReader`'s reads: it builds the
session rows, checks that a log is continuous and that every record is a JSON object, bounds a read
under a request's budget, and words every damage the same way on both stores. A backend (the
SQLite file, PostgreSQL) supplies only its fetching: the ``_fetch_*`` methods, each one query in
its own SQL, returning rows as its driver gives them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from nbagent import _json
from nbagent._json import gc_paused
from nbagent.errors import SessionCorruptError
from nbagent.log.events import Event
from nbagent.store import budget as read_budget
from nbagent.store.base import EventRow, SessionRow, StoredSession

Fetched = Sequence[Any]
"""A row as a backend's driver returns it (a tuple, or a driver's row type)."""


class EventQuery(NamedTuple):
    """Which events a read wants: ``start <= seq < stop``, only ``types`` (all if ``None``), at most
    ``limit`` (a whole number >= 0, or ``None``), in seq order."""

    start: int = 0
    stop: int | None = None
    types: tuple[str, ...] | None = None
    limit: int | None = None


def select_events(
    columns: str, table: str, session_id: str, query: EventQuery, mark: str
) -> tuple[str, list[Any]]:
    """The ``SELECT`` of ``query``'s rows of ``table`` and its arguments, ``mark`` being the
    driver's placeholder (``?`` or ``%s``)."""
    text = f"SELECT {columns} FROM {table} WHERE session_id = {mark} AND seq >= {mark}"
    args: list[Any] = [session_id, query.start]
    if query.stop is not None:
        text += f" AND seq < {mark}"
        args.append(query.stop)
    if query.types is not None:
        text += f" AND type IN ({', '.join([mark] * len(query.types))})"
        args += query.types
    text += " ORDER BY seq"
    if query.limit is not None:
        text += f" LIMIT {mark}"
        args.append(query.limit)
    return text, args


class SessionFigures(NamedTuple):
    """A stored ``sessions`` row and the figures of its log a backend reads with it."""

    stored: Fetched
    last_seq: int | None
    last_time: int | None
    turns: int


class LogFigures(NamedTuple):
    """What the cheap check of a log reads: its row count, last seq and time, and the first row
    whose ``data`` is not valid JSON (``None``: none, or a backend whose server checks it)."""

    rows: int
    last_seq: int
    last_time: int
    first_invalid: int | None


class CheckedReads:
    """The reads of a store over a backend's fetching (a base class of each backend)."""

    location: str
    remedy = "restore the file from a copy"
    """How a damaged log is mended, said after every damage found."""

    # -- what a backend supplies ----------------------------------------------------------------

    def _holds_sessions(self) -> bool:
        """Whether the store has its tables at all (an empty file or schema holds no session)."""
        raise NotImplementedError

    def _fetch_sessions(self, session_id: str | None) -> list[SessionFigures]:
        """The session ``session_id`` (or every session), with its figures."""
        raise NotImplementedError

    def _fetch_last(self, session_id: str) -> Fetched | None:
        """``(seq, time)`` of the session's last event."""
        raise NotImplementedError

    def _fetch_log(self, session_id: str) -> LogFigures:
        raise NotImplementedError

    def _fetch_first_gap(self, session_id: str) -> tuple[int, int]:
        """``(the first missing seq, the seq after it)`` of a log whose count says it has a gap."""
        raise NotImplementedError

    def _fetch_last_of_type(self, session_id: str, type_: str) -> Fetched | None:
        """``(seq, time, type, data)`` of the last event of ``type_``."""
        raise NotImplementedError

    def _fetch_last_quiet(self, session_id: str) -> int | None:
        """The largest seq whose row has ``inbox_pending = 0``."""
        raise NotImplementedError

    def _fetch_events(self, session_id: str, query: EventQuery) -> list[Event]:
        """The events ``query`` selects, decoded with :meth:`_decode` (or :meth:`_bounded`)."""
        raise NotImplementedError

    def _fetch_raw(self, session_id: str, query: EventQuery) -> list[Fetched]:
        """Whole ``events`` rows, as stored."""
        raise NotImplementedError

    def _fetch_stored_session(self, session_id: str) -> Fetched | None:
        raise NotImplementedError

    # -- the reads ------------------------------------------------------------------------------

    def session_row(self, session_id: str) -> SessionRow | None:
        if not self._holds_sessions():
            return None
        found = self._fetch_sessions(session_id)
        return self._session(found[0]) if found else None

    def sessions(self) -> list[SessionRow]:
        """Every session, most recent activity first."""
        if not self._holds_sessions():
            return []
        rows = [self._session(figures) for figures in self._fetch_sessions(None)]
        rows.sort(key=lambda s: (s.last_activity or s.created_at, s.created_at), reverse=True)
        return rows

    def _session(self, figures: SessionFigures) -> SessionRow:
        stored = StoredSession._make(figures.stored)
        try:
            metadata = _json.loads(stored.metadata or "{}")
        except ValueError:
            metadata = {}
        return SessionRow(
            id=stored.id,
            created_at=stored.created_at,
            title=stored.title,
            parent=stored.parent,
            notebook=stored.notebook,
            model=stored.model,
            metadata=metadata,
            events=0 if figures.last_seq is None else figures.last_seq + 1,
            turns=figures.turns,
            last_activity=figures.last_time,
            file=self.location,
        )

    def tail(self, session_id: str) -> tuple[int, int]:
        """``(event count, time of the last event)`` from the last row alone (no scan)."""
        row = self._fetch_last(session_id) if self._holds_sessions() else None
        return (0, 0) if row is None else (row[0] + 1, row[1])

    def check_log(self, session_id: str) -> tuple[int, int]:
        """Check that the log is continuous and every row holds valid JSON (SPEC §6.3).

        Returns ``(event count, time of the last event)``; raises :class:`SessionCorruptError`
        naming the first missing or damaged seq.
        """
        if not self._holds_sessions():
            return 0, 0
        figures = self._fetch_log(session_id)
        if not figures.rows:
            return 0, 0
        if figures.rows != figures.last_seq + 1:
            missing, before = self._fetch_first_gap(session_id)
            raise self._gap(session_id, missing, before, " (nbagent does not truncate logs)")
        if figures.first_invalid is not None:
            raise SessionCorruptError(
                f"session {session_id} in {self.location}: the record at seq {figures.first_invalid} is "
                f"damaged (not valid JSON); {self.remedy} (nbagent does not truncate logs)"
            )
        return figures.rows, figures.last_time

    def checks_may_wait(self, session_id: str) -> bool:
        """Whether the resume checks beyond :meth:`check_log` may wait for the first write."""
        return True

    def last_of_type(self, session_id: str, type_: str) -> Event | None:
        row = self._fetch_last_of_type(session_id, type_) if self._holds_sessions() else None
        return None if row is None else self._event(row)

    def last_quiet_inbox(self, session_id: str) -> int:
        """The seq of the last splice after which both queues were empty (-1 if none)."""
        seq = self._fetch_last_quiet(session_id) if self._holds_sessions() else None
        return -1 if seq is None else seq

    def events(
        self,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """Events with ``start <= seq < stop``, optionally only of ``types``, in seq order.

        Reading every type checks that ``seq`` has no gap.
        """
        wanted = None if types is None else tuple(types)
        if not self._holds_sessions() or wanted == ():
            return []
        query = EventQuery(start, stop, wanted, None if limit is None else max(0, int(limit)))
        out = self._fetch_events(session_id, query)
        if wanted is None:
            for expected, ev in enumerate(out, start):
                if ev.seq != expected:
                    raise self._gap(session_id, expected, ev.seq, "")
        return out

    def raw_rows(self, session_id: str, *, start: int = 0, limit: int | None = None) -> list[EventRow]:
        """Stored rows exactly as written (``data`` as its stored text), in seq order."""
        if not self._holds_sessions():
            return []
        query = EventQuery(start, None, None, None if limit is None else max(0, int(limit)))
        return [EventRow._make(row) for row in self._fetch_raw(session_id, query)]

    def session_tuple(self, session_id: str) -> StoredSession | None:
        """The stored ``sessions`` row as written (the ``session=`` argument of ``write``)."""
        row = self._fetch_stored_session(session_id) if self._holds_sessions() else None
        return None if row is None else StoredSession._make(row)

    # -- decoding and its checks ----------------------------------------------------------------

    def _decode(self, rows: Iterable[Fetched], again: Callable[[], Iterable[Fetched]]) -> list[Event]:
        """``(seq, time, type, data)`` rows as events: fast, and if any fails, ``again()``'s rows
        decoded one by one to name the damaged one."""
        loads = _json.loads
        with gc_paused():
            try:
                return [Event(seq, time_, type_, loads(data)) for seq, time_, type_, data in rows]
            except (ValueError, TypeError):
                return [self._event(row) for row in again()]

    def _event(self, row: Fetched) -> Event:
        """One ``(seq, time, type, data)`` row as an event, its ``data`` a JSON object, or the damage."""
        try:
            if not isinstance(row[3], str | bytes):
                raise ValueError(f"data is a {type(row[3]).__name__}, not JSON text")
            data = _json.loads(row[3])
            if not isinstance(data, dict):
                raise ValueError("data is not a JSON object")
            return Event(row[0], row[1], row[2], data)
        except ValueError as exc:
            raise SessionCorruptError(
                f"the record at seq {row[0]} in {self.location} is damaged ({exc}); {self.remedy}"
            ) from None

    def _bounded(self, rows: Iterable[Fetched], budget: read_budget.Budget) -> list[Event]:
        """A read under a request's budget: counted, stopped at a full page, depth-checked."""
        out: list[Event] = []
        size = 0
        for row in rows:
            if budget.full_page(len(out), size):
                break
            data = row[3]
            length = len(data) if isinstance(data, str | bytes) else 0
            budget.spend(self.location, length)
            size += length
            event = self._event(row)
            if (
                isinstance(data, str)
                and data.count("[") + data.count("{") > budget.max_depth
                and _json.nests_deeper(event.data, budget.max_depth)
            ):
                raise SessionCorruptError(
                    f"the record at seq {row[0]} in {self.location} nests deeper than {budget.max_depth} "
                    f"levels, which nbagent never writes; {self.remedy}"
                )
            out.append(event)
        return out

    def _gap(self, session_id: str, missing: int, before: int, note: str) -> SessionCorruptError:
        return SessionCorruptError(
            f"session {session_id} in {self.location} has a gap in its log: seq {missing} is missing "
            f"before seq {before}; {self.remedy}{note}"
        )
