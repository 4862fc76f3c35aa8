"""The checks ``resume_session`` runs in SQL before it returns (SPEC §6.3), beside the continuity
and JSON checks of :meth:`~nbagent.store.sqlite.SessionFile.check_log`.

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

from nbagent.core.events import INBOX_SPLICED
from nbagent.errors import SessionCorruptError

QUICK_CHECK_BYTES = 16 << 20
"""Files (with their -wal) up to this size get ``PRAGMA quick_check`` at resume (~10 ms)."""
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
