"""The checks a resumed session owes before its first write of any kind (SPEC §6.3), beside the
continuity and JSON checks of :meth:`~nbagent.store.sqlite.store.SessionFile.check_log` that
``resume_session`` runs before it returns. They read every splice and (on small files) every page,
so they run when the store is first asked to write for the session (an ``inject()``, a model
change, the repair of an interrupted turn, the first waking call's records), not at resume: a
resume that only reads pays nothing for them, and nothing is ever appended to a log they refuse (a
refused writer closes without a checkpoint, leaving a -wal and -shm it found). On a log a crashed
writer left in its -wal they run at resume instead, on the reader's copy: a writer opening that log
rebuilds its -shm.

- Every inbox splice of the session is replayed from the start on queue lengths alone (the
  numbers SQLite extracts from each splice; no message is decoded): an impossible splice (a
  start or a removal outside its queue, an unknown queue) or a splice whose recorded count of
  pending messages differs from the replay's is damage, named by its seq.
- ``PRAGMA quick_check`` runs on files up to :data:`QUICK_CHECK_BYTES` (it reads the whole file):
  a corrupt page anywhere is refused before the resumed session appends anything.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from nbagent.errors import SessionCorruptError, SessionWriteError
from nbagent.log.events import INBOX_SPLICED
from nbagent.store.sqlite.file_errors import file_error

QUICK_CHECK_BYTES = 16 << 20
"""Files (with their -wal) up to this size get ``PRAGMA quick_check`` before a resumed session's
first write (about 2 ms per MB)."""
QUEUES = ("next-turn", "next-step")

_SPLICES = (
    "SELECT seq, json_extract(data, '$.target'), json_extract(data, '$.start'), "
    "json_extract(data, '$.removed_count'), json_array_length(data, '$.inserted'), inbox_pending "
    "FROM events INDEXED BY events_by_type WHERE session_id = ? AND type = ? ORDER BY seq"
)


def splice_problem(conn: sqlite3.Connection, session_id: str) -> tuple[int, str] | None:
    """The first splice the inbox cannot have made, as ``(seq, why)``; ``None`` when all replay."""
    lengths = dict.fromkeys(QUEUES, 0)
    for seq, target, start, removed, inserted, pending in conn.execute(_SPLICES, (session_id, INBOX_SPLICED)):
        removed = 0 if removed is None else removed
        if target not in lengths:
            return seq, f"it targets {target!r}, not a queue"
        if type(start) is not int or type(removed) is not int or type(inserted) is not int:
            return seq, "its start, removed_count or inserted is missing or not a number"
        size = lengths[target]
        if not (0 <= start <= size) or removed < 0 or start + removed > size:
            return seq, f"start {start} / removed {removed} lie outside a queue of {size}"
        lengths[target] = size - removed + inserted
        if pending is not None and pending != sum(lengths.values()):
            return (
                seq,
                f"it records {pending} pending messages where the replay gives {sum(lengths.values())}",
            )
    return None


def check_splices(conn: sqlite3.Connection, path: Path, session_id: str) -> None:
    problem = splice_problem(conn, session_id)
    if problem is not None:
        seq, why = problem
        raise SessionCorruptError(
            f"session {session_id} in {path}: the inbox splice at seq {seq} is impossible ({why}); "
            "restore the file from a copy (nbagent does not truncate logs)"
        )


def file_bytes(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.stat(f"{path}{suffix}").st_size
        except FileNotFoundError:
            pass
    return total


def check_pages(conn: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check`` (every page of the file); raises naming the first problems."""
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        problem = "; ".join(str(r[0]) for r in rows[:3])
        raise SessionCorruptError(
            f"{path} is damaged ({problem}); nbagent will not write to it — restore it from a "
            "copy, or pass another path"
        )


def check_all(conn: sqlite3.Connection, path: Path, session_id: str) -> None:
    """The splices' replay, then (files up to :data:`QUICK_CHECK_BYTES`) every page."""
    check_splices(conn, path, session_id)
    if file_bytes(path) <= QUICK_CHECK_BYTES:
        check_pages(conn, path)


def first_gap(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """``(the first missing seq, the seq found in its place)`` of a log whose count is off."""
    expected = 0
    for (seq,) in conn.execute("SELECT seq FROM events WHERE session_id = ? ORDER BY seq", (session_id,)):
        if seq != expected:
            return expected, seq
        expected += 1
    return expected, expected


class CorruptLogError(SessionCorruptError, SessionWriteError):
    """A write refused because the log it would extend is damaged: nothing was written."""


class OwedChecks:
    """The sessions whose resume checks are still owed, settled before the store's next write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sessions: set[str] = set()
        self.refusal: str | None = None
        """Why the file was refused: every later write is refused the same way."""
        self.had_wal = all(os.path.exists(f"{path}{suffix}") for suffix in ("-wal", "-shm"))
        """Whether -wal and -shm were there before the writer opened (a refused file keeps them)."""

    def owe(self, session_id: str) -> None:
        self.sessions.add(session_id)

    def settle(self, conn: sqlite3.Connection) -> None:
        """Run what is owed on ``conn``; raise :class:`CorruptLogError` (and keep refusing) on damage."""
        if self.refusal is None and self.sessions:
            try:
                for session_id in sorted(self.sessions):
                    check_all(conn, self.path, session_id)
            except SessionCorruptError as exc:
                self.refusal = f"{exc}; nothing was recorded"
            except sqlite3.Error as exc:  # damage too deep to read past, or a passing failure
                error = file_error(self.path, exc, "checking")
                if not isinstance(error, SessionCorruptError):
                    raise error from exc  # (not damage: the checks stay owed)
                self.refusal = f"{error}; nothing was recorded"
            else:
                self.sessions.clear()
        if self.refusal is not None:
            raise CorruptLogError(self.refusal)

    def close_refused(self, conn: sqlite3.Connection) -> bool:
        """Close a refused writer's ``conn`` leaving the files as they were (no checkpoint, and a
        -wal and -shm found at opening stay); ``False`` (nothing done) when nothing was refused."""
        if self.refusal is None:
            return False
        holder = None
        if self.had_wal:  # a reader inside a transaction keeps SQLite from removing them at close
            holder = sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, isolation_level=None)
            try:
                holder.execute("BEGIN")
                holder.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.Error:
                pass
        try:
            conn.close()
        finally:
            if holder is not None:
                holder.close()
        return True
