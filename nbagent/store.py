"""The SQLite session file: schema, validation of foreign files, atomic batch writes, reads."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from nbagent import _json
from nbagent.errors import SessionCorruptError, SessionFileError, SessionWriteError
from nbagent.events import Event

APPLICATION_ID = 0x6E626167  # "nbag"
SCHEMA_VERSION = 1
_TABLES = {"sessions", "events"}
SYNCHRONOUS = os.environ.get("NBAGENT_SYNCHRONOUS", "FULL").upper()
"""``FULL`` (default) makes every commit survive power loss; ``NORMAL`` survives process crashes."""

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

Row = tuple[str, int, int, str, str, "int | None"]


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


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        f"file:{quote(str(path))}?mode=rw", uri=True, isolation_level=None, check_same_thread=False
    )
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def _create_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def _check_or_init(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a foreign or newer file before writing anything; initialize an empty one."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise SessionFileError(
            f"{path} is not an nbagent session file ({exc}); pass another path or NBAGENT_DB"
        ) from None
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise SessionFileError(
                f"{path} has nbagent schema version {version}, newer than this nbagent understands "
                f"({SCHEMA_VERSION}); upgrade nbagent to open it"
            )
        if not tables >= _TABLES:
            raise SessionCorruptError(f"{path} is an nbagent file but misses tables {_TABLES - tables}")
        return
    if app_id != 0 or tables:
        raise SessionFileError(
            f"{path} is not an nbagent session file (application id {app_id:#x}, tables: "
            f"{', '.join(sorted(tables)) or 'none'}); nbagent left it unchanged — pass another path"
        )
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-check inside the write lock: another process may have initialized it meanwhile.
        if conn.execute("PRAGMA application_id").fetchone()[0] == 0:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class SessionFile:
    """One connection to one nbagent SQLite file (validated, WAL mode)."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = Path(path).expanduser().absolute()
        if not self.path.exists():
            if not create:
                raise SessionFileError(f"{self.path} does not exist")
            _create_file(self.path)
        self.conn = _connect(self.path)
        try:
            _check_or_init(self.conn, self.path)
            if self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")
        except BaseException:
            self.conn.close()
            raise
        self.lock = threading.Lock()

    def close(self) -> None:
        self.conn.close()

    # -- writes -------------------------------------------------------------------------------

    def write(self, rows: Sequence[Row], *, session: tuple[Any, ...] | None = None) -> None:
        """Insert ``rows`` (and optionally a new ``sessions`` row) in one transaction: all or nothing."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            if session is not None:
                conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)", session)
            if len(rows) == 1:
                conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows[0])
            else:
                conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if isinstance(exc, sqlite3.Error):
                raise SessionWriteError(
                    f"writing to {self.path} failed: {exc}; nothing was recorded"
                ) from exc
            raise

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Update out-of-log metadata (title, model, notebook, metadata)."""
        if "metadata" in fields:
            fields["metadata"] = _json.dumps(fields["metadata"])
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.execute(f"UPDATE sessions SET {cols} WHERE id = ?", (*fields.values(), session_id))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    # -- reads --------------------------------------------------------------------------------

    def session_row(self, session_id: str) -> SessionRow | None:
        row = self.conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return None if row is None else self._session(row)

    def _session(self, row: Sequence[Any]) -> SessionRow:
        sid = row[0]
        last = self.conn.execute(
            "SELECT seq, time FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (sid,)
        ).fetchone()
        turns = self.conn.execute(
            "SELECT count(*) FROM events WHERE session_id = ? AND type = 'turn/start'", (sid,)
        ).fetchone()[0]
        return SessionRow(
            id=sid,
            created_at=row[1],
            title=row[2],
            parent=row[3],
            notebook=row[4],
            model=row[5],
            metadata=_json.loads(row[6] or "{}"),
            events=0 if last is None else last[0] + 1,
            turns=turns,
            last_activity=None if last is None else last[1],
        )

    def sessions(self) -> list[SessionRow]:
        """Every session, most recent activity first."""
        rows = [self._session(r) for r in self.conn.execute("SELECT * FROM sessions")]
        rows.sort(key=lambda s: (s.last_activity or s.created_at, s.created_at), reverse=True)
        return rows

    def tail(self, session_id: str) -> tuple[int, int]:
        """``(event count, time of the last event)`` from the last row alone (no scan).

        A gap in ``seq`` is caught when the log is read in full (:meth:`events`).
        """
        row = self.conn.execute(
            "SELECT seq, time FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (session_id,)
        ).fetchone()
        return (0, 0) if row is None else (row[0] + 1, row[1])

    def last_of_type(self, session_id: str, type_: str) -> Event | None:
        row = self.conn.execute(
            "SELECT seq, time, type, data FROM events WHERE session_id = ? AND type = ? "
            "ORDER BY seq DESC LIMIT 1",
            (session_id, type_),
        ).fetchone()
        return None if row is None else _event(row)

    def last_quiet_inbox(self, session_id: str) -> int:
        """The seq of the last splice after which both queues were empty (-1 if none)."""
        row = self.conn.execute(
            "SELECT max(seq) FROM events WHERE session_id = ? AND inbox_pending = 0", (session_id,)
        ).fetchone()
        return -1 if row[0] is None else row[0]

    def events(
        self, session_id: str, *, start: int = 0, stop: int | None = None, types: Iterable[str] | None = None
    ) -> list[Event]:
        """Events with ``start <= seq < stop``, optionally only of ``types``, in seq order.

        Reading every type checks that ``seq`` has no gap.
        """
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
        loads = _json.loads
        with gc_paused():
            try:
                out = [
                    Event(seq, time_, type_, loads(data))
                    for seq, time_, type_, data in self.conn.execute(sql, args)
                ]
            except ValueError:
                out = [_event(r) for r in self.conn.execute(sql, args)]  # find and name the damaged row
        if types is None:
            for expected, ev in enumerate(out, start):
                if ev.seq != expected:
                    raise SessionCorruptError(
                        f"session {session_id} has a gap in its log: seq {expected} is missing before seq {ev.seq}"
                    )
        return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while bulk-building acyclic objects (JSON rows)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _event(row: Sequence[Any]) -> Event:
    try:
        return Event(row[0], row[1], row[2], _json.loads(row[3]))
    except ValueError as exc:
        raise SessionCorruptError(f"the record at seq {row[0]} is damaged ({exc})") from None
