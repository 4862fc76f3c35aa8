"""The SQLite session file: identification, creation, atomic batch writes, strictly read-only reads.

Every way to open a file first reads its header bytes (:mod:`nbagent.store.sqlite.file_header`), so a foreign,
newer or damaged file is refused before SQLite touches it and stays byte-identical with its
``-wal``/``-shm``; then a read-only view checks the ids again (a ``-wal`` may hold a newer first
page) and the exact schema, and only then does a writer connect for writing. Readers never create
or change anything: where no ``-wal`` holds frames they read the main file as immutable and check
it did not change meanwhile; where a live writer's ``-wal`` exists they read through SQLite's
shared-memory index like any WAL reader; a ``-wal`` left by a writer that stopped is read through
a private copy (:mod:`nbagent.store.sqlite.file_state`). Under a request's budget
(:mod:`nbagent.store.budget`) reads are bounded. Every failure to use the file raises a
:class:`~nbagent.errors.SessionFileError` (or subclass) naming the path and the way out.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from nbagent import _json
from nbagent._json import gc_paused
from nbagent.errors import (
    SessionFileError,
    SessionNotFoundError,
    SessionWriteError,
)
from nbagent.log.events import Event
from nbagent.store import budget as read_budget
from nbagent.store import checked_reads
from nbagent.store.base import Mode, Row
from nbagent.store.checked_reads import CheckedReads, EventQuery, Fetched, LogFigures, SessionFigures
from nbagent.store.location import SqliteLocation
from nbagent.store.sqlite import checks, file_errors, netfs, osfile
from nbagent.store.sqlite.file_errors import file_error as _file_error
from nbagent.store.sqlite.file_errors import guard as _guard
from nbagent.store.sqlite.file_header import (
    APPLICATION_ID,
    HEADER_SIZE,
    SCHEMA_VERSION,
    Header,
    check_ids,
    identify,
)
from nbagent.store.sqlite.file_state import (
    Snapshot,
    check_sidecars,
    fingerprint,
    locked_from,
    regular_or_missing,
)
from nbagent.store.sqlite.lease import FIRST_LEASE_BYTE, Lease
from nbagent.store.sqlite.schema import (
    INVALID_INDEX,
    add_invalid_index,
    check_schema,
    create_file,
    init_schema,
    rollback,
    write_transaction,
)

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SYNCHRONOUS", "SessionFile", "gc_paused"]

log = logging.getLogger("nbagent")
T = TypeVar("T")

SYNCHRONOUS = os.environ.get("NBAGENT_SYNCHRONOUS", "FULL").upper()
"""``FULL`` (default) makes every commit survive power loss; ``NORMAL`` survives process crashes."""
CLOSE_CHECKPOINT_WAIT_MS = 2_000
"""How long a closing writer waits for readers to finish before it checkpoints the WAL."""

# -- connections ---------------------------------------------------------------------------------


def _connect(path: Path, query: str) -> sqlite3.Connection:
    conn = sqlite3.connect(
        f"file:{quote(str(path))}?{query}",
        uri=True,
        isolation_level=None,
        check_same_thread=False,
        cached_statements=256,
    )
    conn.execute(f"PRAGMA busy_timeout = {file_errors.BUSY_TIMEOUT_MS}")
    return conn


ROWS_PER_STATEMENT = 150
"""Events one ``INSERT`` carries: 6 parameters a row stays under SQLite's oldest limit (999)."""


@functools.lru_cache(maxsize=ROWS_PER_STATEMENT)
def _insert_events(rows: int) -> str:
    """``INSERT INTO events VALUES (?, …), …`` for ``rows`` rows (cached: SQLite's statement
    cache then finds the prepared statement by its text)."""
    return "INSERT INTO events VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?)"] * rows)


# -- the file ------------------------------------------------------------------------------------


class SessionFile(CheckedReads):
    """One connection to one nbagent SQLite file (see :class:`nbagent.store.base.SessionStore`).

    ``mode`` is ``"create"`` (open for writing, initialising an empty or missing file),
    ``"write"`` (an existing file) or ``"read"`` (strictly read-only). ``SessionFile(path,
    create=False)`` is the read-only form.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, mode: Mode | None = None
    ) -> None:
        self.mode: Mode = mode or ("create" if create else "read")
        self.path = Path(path).expanduser().absolute()
        self.where = SqliteLocation(self.path)
        self.location = str(self.path)
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self._ref: osfile.FileRef | None = None
        self._immutable: tuple[tuple[int, ...] | None, tuple[int, ...] | None] | None = None
        """For an immutable read: the main file's and -wal's fingerprints when it opened."""
        self._snapshot: Snapshot | None = None
        """For a log a stopped writer left: the private copy the reader reads."""
        self.header = Header(0)
        self._owed = checks.OwedChecks(self.path)
        try:
            self._open()
        except BaseException:
            self.close(checkpoint=False)
            raise

    # -- opening ------------------------------------------------------------------------------

    def _open(self) -> None:
        path = self.path
        check_sidecars(path)
        if not _guard(path, "opening", lambda: regular_or_missing(path)):
            if self.mode != "create":
                raise SessionFileError(
                    f"{path} does not exist; check the path (open_session() creates a new file)"
                )
            _guard(path, "creating", lambda: create_file(path, _connect))
        self._ref = _guard(path, "opening", lambda: osfile.acquire(path))
        ref = self._ref
        self.header = header = identify(
            path, _guard(path, "reading", lambda: ref.pread(HEADER_SIZE, 0)), ref.size()
        )
        if self.mode == "read":
            if not header.empty:
                self._open_reader()
            return
        if header.empty and self.mode == "write":
            raise SessionNotFoundError(f"{path} holds no session; start one with open_session()")
        self._check_writable()
        if not header.empty:
            # Whatever may refuse the file is checked through a read-only view first, so a refused
            # file (a newer schema in its -wal, a foreign schema, damage) stays byte-identical.
            self._open_reader()
            if self.mode == "create":
                self._check_integrity()
            self._close_reader()
        self.conn = _guard(path, "opening", lambda: _connect(path, "mode=rw"))
        conn = self.conn
        if header.empty:
            _guard(path, "initialising", lambda: init_schema(conn))
        _guard(path, "opening", self._set_wal)
        if not self._has_invalid_index():
            _guard(path, "upgrading", self._upgrade)

    def _check_writable(self) -> None:
        path = self.path
        if not os.access(path, os.W_OK):
            raise SessionFileError(
                f"{path} is read-only (file permissions or a read-only mount); nbagent can read it "
                "(list_sessions, read_events) but not write to it — make it writable (chmod u+w) "
                "or pass another path"
            )
        if not os.path.exists(f"{path}-wal") and not os.access(path.parent, os.W_OK):
            raise SessionFileError(
                f"{path.parent} is not writable, and SQLite needs to create {path.name}-wal beside "
                f"{path.name} to write to it; make the folder writable or pass a path in another folder"
            )

    def _check_integrity(self) -> None:
        """``PRAGMA quick_check`` before adding a session to an existing file (O(file size))."""
        _guard(self.path, "checking", lambda: checks.check_pages(self.connection, self.path))

    def _has_invalid_index(self) -> bool:
        conn = self.connection
        return (
            _guard(
                self.path,
                "reading",
                lambda: conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (INVALID_INDEX,)
                ).fetchone(),
            )
            is not None
        )

    def _upgrade(self) -> None:
        """Add what a file written by an older nbagent lacks (the index of invalid rows)."""
        write_transaction(self.connection, add_invalid_index)

    def _set_wal(self) -> None:
        conn = self.connection
        mode = netfs.journal_mode(self.path)  # the rollback journal on a network file system
        if conn.execute("PRAGMA journal_mode").fetchone()[0].upper() != mode:
            conn.execute(f"PRAGMA journal_mode = {mode}")
        conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")

    def _open_reader(self) -> None:
        """A read-only connection that writes nothing, then the ids and schema checked through it."""
        self._close_reader()
        path = self.path
        state = self._files_state()
        if self.header.wal and (state[1] is None or state[1][1] == 0):
            # No write-ahead log holds anything: the main file is the whole log. Read it without
            # taking locks or creating -wal/-shm; each read checks nobody changed either meanwhile.
            self._immutable = state
            self.conn = _guard(path, "opening", lambda: _connect(path, "mode=ro&immutable=1"))
        elif not self.header.wal or (
            os.path.exists(f"{path}-shm") and locked_from(self.ref, FIRST_LEASE_BYTE) is not False
        ):
            # A writer is alive (it holds a lease; a live WAL connection always has its -shm): read
            # through SQLite's WAL index with it. A file in rollback-journal mode (a network file
            # system) is read under SQLite's shared lock.
            self.conn = _guard(path, "opening", lambda: _connect(path, "mode=ro"))
        else:
            # A log left by a writer that stopped: SQLite would rebuild -shm to read it, so read a
            # private copy of the file and its -wal instead.
            budget = read_budget.current()
            limit = None if budget is None else budget.max_copy
            self._snapshot = snapshot = _guard(path, "reading", lambda: Snapshot(self.ref, limit))
            self.conn = _guard(path, "opening", lambda: _connect(snapshot.path, "mode=ro"))
        conn = self.conn
        budget = read_budget.current()
        if budget is not None:
            budget.apply(conn)
        app_id, version = _guard(
            path,
            "reading",
            lambda: (
                conn.execute("PRAGMA application_id").fetchone()[0],
                conn.execute("PRAGMA user_version").fetchone()[0],
            ),
        )
        check_ids(path, app_id, version)  # a -wal may hold a newer first page than the header
        _guard(path, "reading", lambda: check_schema(conn, path))

    def _close_reader(self) -> None:
        conn, self.conn = self.conn, None
        self._immutable = None
        if conn is not None:
            conn.close()
        snapshot, self._snapshot = self._snapshot, None
        if snapshot is not None:
            snapshot.remove()

    def _files_state(self) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
        return fingerprint(self.path), fingerprint(f"{self.path}-wal")

    @property
    def ref(self) -> osfile.FileRef:
        if self._ref is None:
            raise SessionFileError(f"{self.path} is closed")
        return self._ref

    @property
    def connection(self) -> sqlite3.Connection:
        if self.conn is None:
            raise SessionFileError(f"{self.path} is closed")
        return self.conn

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read; an immutable read is retried through the WAL if the file changed meanwhile."""
        for _ in range(5):
            result = _guard(self.path, "reading", lambda: fn(self.connection))
            if self._immutable is None or self._files_state() == self._immutable:
                return result
            self._open_reader()  # a writer appeared: read again, now through its WAL
        return _guard(self.path, "reading", lambda: fn(self.connection))

    # -- leases and closing -------------------------------------------------------------------

    def lease(self, session_id: str) -> Lease:
        return _guard(self.path, "locking", lambda: Lease(self.path, session_id))

    def close(self, *, checkpoint: bool = True) -> None:
        """Close; a writer's clean close checkpoints the WAL into the main file first (SPEC §6.2).

        Under the store's lock: a write or update running on another thread finishes first, and
        one starting later finds the store closed (it never uses a closed connection).
        """
        with self.lock:
            self._close(checkpoint)

    def _close(self, checkpoint: bool) -> None:
        conn, self.conn = self.conn, None
        try:
            if conn is not None and not self._owed.close_refused(conn):
                if checkpoint and self.mode != "read":
                    try:
                        conn.execute(f"PRAGMA busy_timeout = {CLOSE_CHECKPOINT_WAIT_MS}")
                        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                        if busy:
                            log.info("nbagent: %s is still in use; its WAL is checkpointed later", self.path)
                    except sqlite3.Error as exc:
                        log.warning("nbagent: checkpointing %s on close failed: %s", self.path, exc)
                conn.close()
        finally:
            snapshot, self._snapshot = self._snapshot, None
            if snapshot is not None:
                snapshot.remove()
            ref, self._ref = self._ref, None
            if ref is not None:
                ref.release()

    # -- writes -------------------------------------------------------------------------------

    def write(self, rows: Sequence[Row], *, session: tuple[Any, ...] | None = None) -> None:
        """Insert ``rows`` (and optionally a new ``sessions`` row) in one transaction: all or nothing."""
        with self.lock:
            self._owed.settle(self.connection)
            self._write(rows, session)

    def _write(self, rows: Sequence[Row], session: tuple[Any, ...] | None) -> None:
        conn = self.connection
        try:
            if session is None and 0 < len(rows) <= ROWS_PER_STATEMENT:
                # One statement is its own transaction (all or nothing), begun like BEGIN IMMEDIATE
                # and committed by SQLite before it returns: one call, so the writing thread gives
                # the GIL up once per write rather than once per row and per BEGIN and COMMIT.
                conn.execute(_insert_events(len(rows)), [value for row in rows for value in row])
                return
            conn.execute("BEGIN IMMEDIATE")
            if session is not None:
                conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)", session)
            for start in range(0, len(rows), ROWS_PER_STATEMENT):
                chunk = rows[start : start + ROWS_PER_STATEMENT]
                conn.execute(_insert_events(len(chunk)), [value for row in chunk for value in row])
            conn.execute("COMMIT")
        except BaseException as exc:
            rollback(conn)
            if isinstance(exc, sqlite3.Error | OSError):
                error = _file_error(self.path, exc, "writing to")
                if not isinstance(error, SessionWriteError):
                    error = SessionWriteError(f"{error}; nothing was recorded")
                raise error from exc
            raise

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Update out-of-log metadata (title, model, notebook, metadata)."""
        if "metadata" in fields:
            fields["metadata"] = _json.dumps(fields["metadata"])
        cols = ", ".join(f"{k} = ?" for k in fields)

        def update(conn: sqlite3.Connection) -> None:
            conn.execute(f"UPDATE sessions SET {cols} WHERE id = ?", (*fields.values(), session_id))

        self._transaction(update, settle=True)

    def delete_session(self, session_id: str) -> None:
        """Delete a session's row and its whole log in one transaction (``nbagent sessions prune``;
        the caller holds its lease)."""

        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

        self._transaction(delete)

    def copy_within(self, parent: str, stop: int, session: Sequence[Any], own: Sequence[Row]) -> None:
        """Create ``session`` holding ``parent``'s rows up to ``stop`` and then ``own``, in one
        transaction, the rows copied by SQLite itself (a fork within this file)."""

        def copy(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)", session)
            conn.execute(
                "INSERT INTO events SELECT ?, seq, time, type, data, inbox_pending FROM events "
                "WHERE session_id = ? AND seq <= ? ORDER BY seq",
                (session[0], parent, stop),
            )
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", own)

        self._transaction(copy)

    def _transaction(self, work: Callable[[sqlite3.Connection], object], *, settle: bool = False) -> None:
        """``work`` in one ``BEGIN IMMEDIATE`` transaction under the lock, rolled back if it fails;
        ``settle`` first runs the resume checks a write to the log owes (:meth:`write` runs them too)."""

        with self.lock:
            if settle:
                self._owed.settle(self.connection)
            _guard(self.path, "writing to", lambda: write_transaction(self.connection, work))

    # -- fetching, for the shared reads and checks (:class:`CheckedReads`) -------------------------

    def _holds_sessions(self) -> bool:
        return not (self.conn is None and self.header.empty)

    def _fetch_sessions(self, session_id: str | None) -> list[SessionFigures]:
        def read(conn: sqlite3.Connection) -> list[SessionFigures]:
            if session_id is None:
                stored = conn.execute("SELECT * FROM sessions").fetchall()
            else:
                stored = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchall()
            return [_figures(conn, row) for row in stored]

        return self._read(read)

    def _fetch_last(self, session_id: str) -> Fetched | None:
        return self._read(lambda c: _last(c, session_id))

    def _fetch_log(self, session_id: str) -> LogFigures:
        indexed = self._has_invalid_index()
        return self._read(lambda c: _log_figures(c, session_id, indexed=indexed))

    def _fetch_first_gap(self, session_id: str) -> tuple[int, int]:
        return self._read(lambda c: checks.first_gap(c, session_id))

    def checks_may_wait(self, session_id: str) -> bool:
        """Whether the resume checks beyond :meth:`check_log` may wait for the first write; on a log
        a stopped writer left (a writer opening it rebuilds its -shm) they run now, on this reader."""
        if self._snapshot is None:
            return True
        self._read(lambda c: checks.check_all(c, self.path, session_id))
        return False

    def check_before_first_write(self, session_id: str) -> None:
        """Owe a resumed session the checks beyond :meth:`check_log` (:mod:`~nbagent.store.sqlite.checks`),
        run before this store's first write of any kind; damage refuses it and every later one."""
        self._owed.owe(session_id)

    def _fetch_last_of_type(self, session_id: str, type_: str) -> Fetched | None:
        return self._read(
            lambda c: c.execute(
                # The planner would walk the whole log backwards on the primary key instead.
                "SELECT seq, time, type, data FROM events INDEXED BY events_by_type "
                "WHERE session_id = ? AND type = ? ORDER BY seq DESC LIMIT 1",
                (session_id, type_),
            ).fetchone()
        )

    def _fetch_last_quiet(self, session_id: str) -> int | None:
        return self._read(
            lambda c: c.execute(
                "SELECT max(seq) FROM events WHERE session_id = ? AND inbox_pending = 0", (session_id,)
            ).fetchone()[0]
        )

    def _fetch_events(self, session_id: str, query: EventQuery) -> list[Event]:
        sql, args = checked_reads.select_events("seq, time, type, data", "events", session_id, query, "?")
        budget = read_budget.current()

        def read(conn: sqlite3.Connection) -> list[Event]:
            if budget is not None:
                return self._bounded(conn.execute(sql, args), budget)
            return self._decode(conn.execute(sql, args), lambda: conn.execute(sql, args))

        return self._read(read)

    def _fetch_raw(self, session_id: str, query: EventQuery) -> list[Fetched]:
        sql, args = checked_reads.select_events("*", "events", session_id, query, "?")
        return self._read(lambda c: c.execute(sql, args).fetchall())

    def _fetch_stored_session(self, session_id: str) -> Fetched | None:
        return self._read(
            lambda c: c.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        )

    # -- beside a writer ------------------------------------------------------------------------

    def reader(self) -> SessionFile:
        """Another, read-only connection to the same file."""
        return SessionFile(self.path, mode="read")


def _last(conn: sqlite3.Connection, session_id: str) -> Fetched | None:
    return conn.execute(
        "SELECT seq, time FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (session_id,)
    ).fetchone()


def _figures(conn: sqlite3.Connection, stored: Fetched) -> SessionFigures:
    last = _last(conn, stored[0])
    turns = conn.execute(
        "SELECT count(*) FROM events WHERE session_id = ? AND type = 'turn/start'", (stored[0],)
    ).fetchone()[0]
    last_seq, last_time = last or (None, None)
    return SessionFigures(stored, last_seq, last_time, turns)


def _log_figures(conn: sqlite3.Connection, session_id: str, *, indexed: bool) -> LogFigures:
    """Count, last seq and time, first row that is not valid JSON: by the indexes, no JSON decoded."""
    count, last = conn.execute(
        "SELECT count(*), max(seq) FROM events INDEXED BY events_by_type WHERE session_id = ?", (session_id,)
    ).fetchone()
    if not count:
        return LogFigures(0, -1, 0, None)
    by = f"INDEXED BY {INVALID_INDEX} " if indexed else ""
    (bad,) = conn.execute(
        f"SELECT min(seq) FROM events {by}WHERE session_id = ? AND NOT json_valid(data)", (session_id,)
    ).fetchone()
    (time_,) = conn.execute(
        "SELECT time FROM events WHERE session_id = ? AND seq = ?", (session_id, last)
    ).fetchone()
    return LogFigures(count, last, time_, bad)
