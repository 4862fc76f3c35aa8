"""The SQLite session file's schema: creating a file with it, and checking a file holds exactly it.

A file that carries nbagent's application id but whose tables differ (a computed ``data``
column, an extra trigger or view, a changed index) is not used: such a file is crafted or
damaged, and reading it could cost anything (SPEC §6.1).
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

from nbagent.errors import SessionCorruptError
from nbagent.store.sqlite import netfs
from nbagent.store.sqlite.file_header import APPLICATION_ID, SCHEMA_VERSION

log = logging.getLogger("nbagent")

SCHEMA = """
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
INVALID_INDEX = "events_invalid"
INVALID_INDEX_SQL = (
    f"CREATE INDEX IF NOT EXISTS {INVALID_INDEX} ON events (session_id, seq) WHERE NOT json_valid(data)"
)
"""A partial index of the rows that are not valid JSON: SQLite keeps it on every insert and update,
so "every row holds valid JSON" is one index lookup at resume instead of a scan of the whole log."""

TABLES = ("sessions", "events")


def _norm(sql: str | None) -> str | None:
    return None if sql is None else " ".join(sql.replace("IF NOT EXISTS ", "").split())


def _expected() -> dict[tuple[str, str], tuple[str, str | None]]:
    """``(type, name) -> (table, normalised SQL)`` of every object an nbagent file holds."""
    out: dict[tuple[str, str], tuple[str, str | None]] = {
        ("index", "sqlite_autoindex_sessions_1"): ("sessions", None),
    }
    for stmt in [*SCHEMA.split(";"), INVALID_INDEX_SQL]:
        words = stmt.split()
        if not words:
            continue
        kind, name = words[1].lower(), words[2] if words[2] != "IF" else words[5]
        table = name if kind == "table" else words[words.index("ON") + 1]
        out[(kind, name)] = (table, _norm(stmt))
    return out


EXPECTED = _expected()
OPTIONAL = {("index", INVALID_INDEX)}
"""Objects a file written by an older nbagent may lack (a writer adds them when it opens)."""


def check_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Raise :class:`SessionCorruptError` unless ``conn``'s schema is exactly nbagent's."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    found = {(kind, name): (table, _norm(sql)) for kind, name, table, sql in rows}
    missing = [name for kind, name in EXPECTED if (kind, name) not in found and (kind, name) not in OPTIONAL]
    tables = [name for name in TABLES if ("table", name) in found]
    if len(tables) < len(TABLES):
        raise SessionCorruptError(
            f"{path} is an nbagent file but misses tables {sorted(set(TABLES) - set(tables))}; restore "
            "it from a copy or pass another path"
        )
    odd = sorted(f"{kind} {name}" for key in found.keys() - EXPECTED.keys() for kind, name in [key])
    odd += sorted(
        f"{kind} {name}" for (kind, name), spec in found.items() if EXPECTED.get((kind, name), spec) != spec
    )
    if missing or odd:
        what = "; ".join(
            [*(f"{name} is missing" for name in missing), *(f"{item} is not nbagent's" for item in odd)][:4]
        )
        raise SessionCorruptError(
            f"{path} carries nbagent's application id but its schema is not nbagent's ({what}); nbagent "
            "does not use it and left it unchanged — restore it from a copy or pass another path"
        )


def init_schema(conn: sqlite3.Connection) -> None:
    """Initialise an empty database inside one write transaction (re-checked under the lock)."""

    def init(conn: sqlite3.Connection) -> None:
        if conn.execute("PRAGMA application_id").fetchone()[0] == 0:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            for stmt in SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            add_invalid_index(conn)

    write_transaction(conn, init)


def write_transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], object]) -> None:
    """``work(conn)`` in one write transaction (``BEGIN IMMEDIATE``): committed, or rolled back if it
    raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        work(conn)
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back what is open; never let the rollback's own failure hide the error that caused it
    (SQLite has already rolled back after a full disk: "cannot rollback - no transaction")."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def add_invalid_index(conn: sqlite3.Connection) -> None:
    try:
        conn.execute(INVALID_INDEX_SQL)
    except sqlite3.OperationalError as exc:  # an SQLite built without JSON functions: scan instead
        log.info("nbagent: no index of invalid rows (%s); resume checks by scanning", exc)


def create_file(path: Path, connect: Callable[[Path, str], sqlite3.Connection]) -> None:
    """Create a missing session file atomically: build it aside, then link it into place.

    Other processes see either no file or a complete nbagent file, never a half-initialised one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_drafts(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.creating"
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        conn = connect(tmp, "mode=rw")
        try:
            conn.execute(f"PRAGMA journal_mode = {netfs.journal_mode(path)}")
            init_schema(conn)
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
