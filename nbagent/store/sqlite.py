"""The SQLite session file: identification, creation, atomic batch writes, strictly read-only reads.

Every way to open a file first reads its header bytes (:mod:`nbagent.store.file_header`), so a foreign,
newer or damaged file is refused before SQLite touches it and stays byte-identical with its
``-wal``/``-shm``. Readers never create anything: where no ``-wal`` exists (no writer is active)
they read the main file as immutable and check it did not change meanwhile; where one exists
they read through SQLite's shared-memory index like any WAL reader. Every failure to use the file
raises a :class:`~nbagent.errors.SessionFileError` (or subclass) naming the path and the way out.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from nbagent import _json
from nbagent._json import gc_paused
from nbagent.core.events import Event
from nbagent.errors import (
    SessionCorruptError,
    SessionFileError,
    SessionNotFoundError,
    SessionWriteError,
)
from nbagent.store import netfs, osfile
from nbagent.store.base import Mode, Row, SessionRow
from nbagent.store.file_header import APPLICATION_ID, HEADER_SIZE, SCHEMA_VERSION, Header, identify
from nbagent.store.lease import Lease

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SYNCHRONOUS", "SessionFile", "gc_paused"]

log = logging.getLogger("nbagent")
T = TypeVar("T")

SYNCHRONOUS = os.environ.get("NBAGENT_SYNCHRONOUS", "FULL").upper()
"""``FULL`` (default) makes every commit survive power loss; ``NORMAL`` survives process crashes."""
BUSY_TIMEOUT_MS = 10_000
CLOSE_CHECKPOINT_WAIT_MS = 2_000
"""How long a closing writer waits for readers to finish before it checkpoints the WAL."""

_TABLES = {"sessions", "events"}
_SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    title TEXT,
    parent TEXT,
    notebook TEXT,
    model TEXT,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    time INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    inbox_pending INTEGER,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX events_by_type ON events (session_id, type, seq);
CREATE INDEX events_inbox_quiet ON events (session_id, seq) WHERE inbox_pending = 0;
"""
_INVALID_INDEX = "events_invalid"
_INVALID_INDEX_SQL = (
    f"CREATE INDEX IF NOT EXISTS {_INVALID_INDEX} ON events (session_id, seq) WHERE NOT json_valid(data)"
)
"""A partial index of the rows that are not valid JSON: SQLite keeps it on every insert and update,
so "every row holds valid JSON" is one index lookup at resume instead of a scan of the whole log."""


# -- errors ------------------------------------------------------------------------------------------


def _file_error(path: Path, exc: BaseException, doing: str) -> SessionFileError:
    """Turn an ``OSError`` or ``sqlite3.Error`` into an nbagent error naming the path and the remedy."""
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    low = text.lower()
    if isinstance(exc, IsADirectoryError) or (isinstance(exc, OSError) and exc.errno == errno.EISDIR):
        return SessionFileError(
            f"{path} is a directory, not a session file; pass a file path such as {path / 'nbagent.sqlite'}"
        )
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "disk is full" in low or code == 13:
        return SessionWriteError(
            f"{doing} {path} failed: the disk is full; free some space there (or pass a path on another "
            "disk) and try again — nothing was recorded"
        )
    if (
        isinstance(exc, PermissionError)
        or (isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM))
        or "readonly" in low
        or "read-only" in low
    ):
        return SessionFileError(
            f"{doing} {path} failed: it is not writable here ({text}); make it and its folder "
            "writable, or pass a path in a folder you can write"
        )
    if "malformed" in low or "not a database" in low or code in (11, 26):
        return SessionCorruptError(
            f"{path} is damaged ({text}); nbagent will not write to it — restore it from a copy, "
            "or pass another path"
        )
    if "locked" in low or "busy" in low:
        return SessionWriteError(
            f"{doing} {path} failed: another connection held it locked for "
            f"{BUSY_TIMEOUT_MS // 1000} s ({text}); nothing was recorded — try again, or close the "
            "program holding it"
        )
    return SessionFileError(f"{doing} {path} failed ({text}); check the path and its permissions")


def _guard(path: Path, doing: str, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except (sqlite3.Error, OSError) as exc:
        raise _file_error(path, exc, doing) from exc


# -- connections ---------------------------------------------------------------------------------


def _connect(path: Path, query: str) -> sqlite3.Connection:
    conn = sqlite3.connect(
        f"file:{quote(str(path))}?{query}", uri=True, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _init_schema(conn: sqlite3.Connection) -> None:
    """Initialise an empty database inside one write transaction (re-checked under the lock)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA application_id").fetchone()[0] == 0:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            _add_invalid_index(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _add_invalid_index(conn: sqlite3.Connection) -> None:
    try:
        conn.execute(_INVALID_INDEX_SQL)
    except sqlite3.OperationalError as exc:  # an SQLite built without JSON functions: scan instead
        log.info("nbagent: no index of invalid rows (%s); resume checks by scanning", exc)


def _create(path: Path) -> None:
    """Create a missing session file atomically: build it aside, then link it into place.

    Other processes see either no file or a complete nbagent file, never a half-initialised one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_drafts(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.creating"
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        conn = _connect(tmp, "mode=rw")
        try:
            conn.execute(f"PRAGMA journal_mode = {netfs.journal_mode(path)}")
            _init_schema(conn)
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created it first: use theirs
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            try:  # a file system without hard links: claim the name, then initialise in place
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                pass
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal")):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass


def _remove_stale_drafts(path: Path) -> None:
    """Remove files a creator killed mid-way left beside ``path`` (their process is gone)."""
    for draft in path.parent.glob(f".{path.name}.*.creating"):
        try:
            pid = int(draft.name[len(path.name) + 2 :].split("-", 1)[0])
            os.kill(pid, 0)
            continue  # its creator still runs
        except ProcessLookupError:
            pass
        except (ValueError, PermissionError):
            continue
        for leftover in (draft, Path(f"{draft}-wal"), Path(f"{draft}-shm"), Path(f"{draft}-journal")):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass


def _fingerprint(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# -- the file ------------------------------------------------------------------------------------


class SessionFile:
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
        self.location = str(self.path)
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self._ref: osfile.FileRef | None = None
        self._immutable: tuple[int, ...] | None = None
        """For an immutable read: the main file's fingerprint when the connection opened."""
        self.header = Header(0)
        try:
            self._open()
        except BaseException:
            self.close(checkpoint=False)
            raise

    # -- opening ------------------------------------------------------------------------------

    def _open(self) -> None:
        path = self.path
        if _guard(path, "opening", path.is_dir):
            raise _file_error(path, IsADirectoryError(errno.EISDIR, "is a directory"), "opening")
        if not _guard(path, "opening", path.exists):
            if self.mode != "create":
                raise SessionFileError(
                    f"{path} does not exist; check the path (open_session() creates a new file)"
                )
            _guard(path, "creating", lambda: _create(path))
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
        self.conn = _guard(path, "opening", lambda: _connect(path, "mode=rw"))
        conn = self.conn
        if header.empty:
            _guard(path, "initialising", lambda: _init_schema(conn))
        elif self.mode == "create":
            self._check_integrity()
        self._check_tables()
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
        rows = _guard(self.path, "checking", lambda: self.connection.execute("PRAGMA quick_check").fetchall())
        if rows != [("ok",)]:
            problem = "; ".join(str(r[0]) for r in rows[:3])
            raise SessionCorruptError(
                f"{self.path} is damaged ({problem}); nbagent will not write to it — restore it from a "
                "copy, or pass another path"
            )

    def _has_invalid_index(self) -> bool:
        conn = self.connection
        return (
            _guard(
                self.path,
                "reading",
                lambda: conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (_INVALID_INDEX,)
                ).fetchone(),
            )
            is not None
        )

    def _upgrade(self) -> None:
        """Add what a file written by an older nbagent lacks (the index of invalid rows)."""
        conn = self.connection
        conn.execute("BEGIN IMMEDIATE")
        try:
            _add_invalid_index(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _set_wal(self) -> None:
        conn = self.connection
        mode = netfs.journal_mode(self.path)  # the rollback journal on a network file system
        if conn.execute("PRAGMA journal_mode").fetchone()[0].upper() != mode:
            conn.execute(f"PRAGMA journal_mode = {mode}")
        conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")

    def _check_tables(self) -> None:
        conn = self.connection
        tables = _guard(
            self.path,
            "reading",
            lambda: {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")},
        )
        if not tables >= _TABLES:
            raise SessionCorruptError(
                f"{self.path} is an nbagent file but misses tables {sorted(_TABLES - tables)}; restore "
                "it from a copy or pass another path"
            )

    def _open_reader(self) -> None:
        path = self.path
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        before = _fingerprint(path)
        if os.path.exists(f"{path}-wal") or not self.header.wal:
            # A writer is active (or left its log behind): read through SQLite's WAL index. A file
            # in rollback-journal mode (a network file system) is read under SQLite's shared lock.
            self._immutable = None
            self.conn = _guard(path, "opening", lambda: _connect(path, "mode=ro"))
        else:
            # No writer is active: the main file is the whole log. Read it without taking locks
            # or creating -wal/-shm, and check afterwards that nobody changed it meanwhile.
            self._immutable = before
            self.conn = _guard(path, "opening", lambda: _connect(path, "mode=ro&immutable=1"))
        self._check_tables()

    @property
    def connection(self) -> sqlite3.Connection:
        if self.conn is None:
            raise SessionFileError(f"{self.path} is closed")
        return self.conn

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read; an immutable read is retried through the WAL if the file changed meanwhile."""
        for _ in range(5):
            result = _guard(self.path, "reading", lambda: fn(self.connection))
            if self._immutable is None or (
                _fingerprint(self.path) == self._immutable and not os.path.exists(f"{self.path}-wal")
            ):
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
            if conn is not None:
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
            ref, self._ref = self._ref, None
            if ref is not None:
                ref.release()

    # -- writes -------------------------------------------------------------------------------

    def write(self, rows: Sequence[Row], *, session: tuple[Any, ...] | None = None) -> None:
        """Insert ``rows`` (and optionally a new ``sessions`` row) in one transaction: all or nothing."""
        with self.lock:
            self._write(rows, session)

    def _write(self, rows: Sequence[Row], session: tuple[Any, ...] | None) -> None:
        conn = self.connection
        try:
            conn.execute("BEGIN IMMEDIATE")
            if session is not None:
                conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)", session)
            if len(rows) == 1:
                conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows[0])
            elif rows:
                conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
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

        def update() -> None:
            conn = self.connection
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(f"UPDATE sessions SET {cols} WHERE id = ?", (*fields.values(), session_id))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        with self.lock:
            _guard(self.path, "writing to", update)

    # -- reads --------------------------------------------------------------------------------

    def session_row(self, session_id: str) -> SessionRow | None:
        if self.conn is None and self.header.empty:
            return None
        return self._read(lambda c: self._session_row(c, session_id))

    def _session_row(self, conn: sqlite3.Connection, session_id: str) -> SessionRow | None:
        row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return None if row is None else self._session(conn, row)

    def _session(self, conn: sqlite3.Connection, row: Sequence[Any]) -> SessionRow:
        sid = row[0]
        last = conn.execute(
            "SELECT seq, time FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (sid,)
        ).fetchone()
        turns = conn.execute(
            "SELECT count(*) FROM events WHERE session_id = ? AND type = 'turn/start'", (sid,)
        ).fetchone()[0]
        try:
            metadata = _json.loads(row[6] or "{}")
        except ValueError:
            metadata = {}
        return SessionRow(
            id=sid,
            created_at=row[1],
            title=row[2],
            parent=row[3],
            notebook=row[4],
            model=row[5],
            metadata=metadata,
            events=0 if last is None else last[0] + 1,
            turns=turns,
            last_activity=None if last is None else last[1],
            file=self.location,
        )

    def sessions(self) -> list[SessionRow]:
        """Every session, most recent activity first."""
        if self.conn is None and self.header.empty:
            return []

        def read(conn: sqlite3.Connection) -> list[SessionRow]:
            return [self._session(conn, r) for r in conn.execute("SELECT * FROM sessions").fetchall()]

        rows = self._read(read)
        rows.sort(key=lambda s: (s.last_activity or s.created_at, s.created_at), reverse=True)
        return rows

    def tail(self, session_id: str) -> tuple[int, int]:
        """``(event count, time of the last event)`` from the last row alone (no scan)."""
        row = self._read(
            lambda c: c.execute(
                "SELECT seq, time FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (session_id,)
            ).fetchone()
        )
        return (0, 0) if row is None else (row[0] + 1, row[1])

    def check_log(self, session_id: str) -> tuple[int, int]:
        """Check in SQL that the log is continuous and every row holds valid JSON (SPEC §6.3).

        Returns ``(event count, time of the last event)``; raises :class:`SessionCorruptError`
        naming the first missing or damaged seq.
        """

        indexed = self._has_invalid_index()

        def scan(conn: sqlite3.Connection) -> tuple[int, int, int, int | None]:
            count, last = conn.execute(
                "SELECT count(*), max(seq) FROM events INDEXED BY events_by_type WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if not count:
                return 0, -1, 0, None
            if indexed:
                (bad,) = conn.execute(
                    f"SELECT min(seq) FROM events INDEXED BY {_INVALID_INDEX} "
                    "WHERE session_id = ? AND NOT json_valid(data)",
                    (session_id,),
                ).fetchone()
            else:
                (bad,) = conn.execute(
                    "SELECT min(seq) FROM events WHERE session_id = ? AND NOT json_valid(data)", (session_id,)
                ).fetchone()
            time_ = conn.execute(
                "SELECT time FROM events WHERE session_id = ? AND seq = ?", (session_id, last)
            ).fetchone()[0]
            return count, last, time_, bad

        count, last, last_time, bad = self._read(scan)
        if count != last + 1:
            missing, before = self._read(lambda c: self._first_gap(c, session_id))
            raise SessionCorruptError(
                f"session {session_id} in {self.path} has a gap in its log: seq {missing} is missing "
                f"before seq {before}; restore the file from a copy (nbagent does not truncate logs)"
            )
        if bad is not None:
            raise SessionCorruptError(
                f"session {session_id} in {self.path}: the record at seq {bad} is damaged (not valid "
                "JSON); restore the file from a copy (nbagent does not truncate logs)"
            )
        return count, last_time

    @staticmethod
    def _first_gap(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
        expected = 0
        for (seq,) in conn.execute("SELECT seq FROM events WHERE session_id = ? ORDER BY seq", (session_id,)):
            if seq != expected:
                return expected, seq
            expected += 1
        return expected, expected

    def last_of_type(self, session_id: str, type_: str) -> Event | None:
        row = self._read(
            lambda c: c.execute(
                # The planner would walk the whole log backwards on the primary key instead.
                "SELECT seq, time, type, data FROM events INDEXED BY events_by_type "
                "WHERE session_id = ? AND type = ? ORDER BY seq DESC LIMIT 1",
                (session_id, type_),
            ).fetchone()
        )
        return None if row is None else _event(row, self.path)

    def last_quiet_inbox(self, session_id: str) -> int:
        """The seq of the last splice after which both queues were empty (-1 if none)."""
        row = self._read(
            lambda c: c.execute(
                "SELECT max(seq) FROM events WHERE session_id = ? AND inbox_pending = 0", (session_id,)
            ).fetchone()
        )
        return -1 if row[0] is None else row[0]

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

        Reading every type from the start checks that ``seq`` has no gap.
        """
        if self.conn is None and self.header.empty:
            return []
        sql = "SELECT seq, time, type, data FROM events WHERE session_id = ? AND seq >= ?"
        args: list[Any] = [session_id, start]
        if stop is not None:
            sql += " AND seq < ?"
            args.append(stop)
        if types is not None:
            types = list(types)
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            args += types
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(max(0, int(limit)))
        loads = _json.loads

        def read(conn: sqlite3.Connection) -> list[Event]:
            with gc_paused():
                try:
                    return [
                        Event(seq, time_, type_, loads(data))
                        for seq, time_, type_, data in conn.execute(sql, args)
                    ]
                except (ValueError, TypeError):
                    return [_event(r, self.path) for r in conn.execute(sql, args)]  # name the damaged row

        out = self._read(read)
        if types is None:
            for expected, ev in enumerate(out, start):
                if ev.seq != expected:
                    raise SessionCorruptError(
                        f"session {session_id} in {self.path} has a gap in its log: seq {expected} is "
                        f"missing before seq {ev.seq}; restore the file from a copy"
                    )
        return out

    # -- beside a writer, and for copying between stores ----------------------------------------

    def reader(self) -> SessionFile:
        """Another, read-only connection to the same file."""
        return SessionFile(self.path, mode="read")

    def raw_rows(self, session_id: str, *, start: int = 0, limit: int | None = None) -> list[Row]:
        """Stored rows exactly as written (``data`` as its stored text), in seq order."""
        if self.conn is None and self.header.empty:
            return []
        sql = "SELECT * FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?"
        args = (session_id, start, -1 if limit is None else max(0, int(limit)))
        return self._read(lambda c: c.execute(sql, args).fetchall())

    def session_tuple(self, session_id: str) -> tuple[Any, ...] | None:
        """The stored ``sessions`` row as written (the ``session=`` argument of :meth:`write`)."""
        if self.conn is None and self.header.empty:
            return None
        return self._read(
            lambda c: c.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        )


def _event(row: Sequence[Any], path: Path) -> Event:
    try:
        if not isinstance(row[3], str | bytes):
            raise ValueError(f"data is a {type(row[3]).__name__}, not JSON text")
        data = _json.loads(row[3])
        if not isinstance(data, dict):
            raise ValueError("data is not a JSON object")
        return Event(row[0], row[1], row[2], data)
    except ValueError as exc:
        raise SessionCorruptError(
            f"the record at seq {row[0]} in {path} is damaged ({exc}); restore the file from a copy"
        ) from None
