"""Copying sessions between stores (SQLite ⇄ PostgreSQL), byte-identical in events (SPEC §6.5).

A copy is idempotent: a session already at the destination is compared row by row with the
source and only the rows it lacks are appended, so copying again after the source grew carries
the new events over. A destination session with the same id that is not the same session (another
creation time, or a row that differs) is refused and left unchanged. The destination's lease is
held while appending, so a live writer there and a copy never interleave.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nbagent.errors import NbagentError, SessionNotFoundError
from nbagent.store.base import SessionStore, StoreReader
from nbagent.store.location import Where
from nbagent.store.opening import open_reader, open_store

PAGE = 5000
"""Rows read, compared and written at a time (each written page is one transaction)."""

Outcome = Literal["copied", "extended", "up to date", "ahead"]


class SessionConflictError(NbagentError):
    """The destination holds a different session under the same id; nothing was changed."""


@dataclass(frozen=True)
class CopyResult:
    """What copying one session did: ``copied`` (new there), ``extended`` (rows appended), ``up to
    date``, or ``ahead`` (the destination has every source row and more; left unchanged)."""

    session_id: str
    outcome: Outcome
    appended: int
    events: int
    """The number of events of the session in the source."""


def copy_sessions(
    source: Where,
    destination: Where,
    *,
    session_id: str | None = None,
) -> list[CopyResult]:
    """Copy every session of ``source`` (or only ``session_id``) into ``destination``.

    Either may be a SQLite path or a ``postgresql://`` URL; the destination is created if missing.
    Raises :class:`SessionConflictError` for a session the destination holds differently (sessions
    before it in the order of ``list_sessions`` have been copied; none after it is touched).
    """
    src = open_reader(source)
    try:
        if session_id is None:
            ids = [row.id for row in reversed(src.sessions())]  # oldest first
        else:
            if src.session_row(session_id) is None:
                raise SessionNotFoundError(f"no session {session_id} in {src.location}; see list_sessions()")
            ids = [session_id]
        if not ids:
            return []
        dst = open_store(destination, "create")
        try:
            return [_copy_one(src, dst, sid) for sid in ids]
        finally:
            dst.close()
    finally:
        src.close()


def _copy_one(src: StoreReader, dst: SessionStore, session_id: str) -> CopyResult:
    meta = src.session_tuple(session_id)
    if meta is None:
        raise SessionNotFoundError(f"no session {session_id} in {src.location}; see list_sessions()")
    lease = dst.lease(session_id)
    try:
        there = dst.session_tuple(session_id)
        if there is not None and (there.id, there.created_at) != (meta.id, meta.created_at):
            raise SessionConflictError(
                f"{dst.location} already holds another session with id {session_id} (created at "
                f"{there.created_at}, the source's at {meta.created_at}); nothing was copied for it — copy into "
                "another store, or remove that session there first"
            )
        copied = appended = 0
        new_session = there is None
        while True:
            rows = src.raw_rows(session_id, start=copied, limit=PAGE)
            if not rows:
                break
            theirs = [] if new_session else dst.raw_rows(session_id, start=copied, limit=len(rows))
            for mine, other in zip(rows, theirs):
                if mine != other:
                    raise SessionConflictError(
                        f"session {session_id} in {dst.location} differs from the one in {src.location} "
                        f"at seq {mine.seq}; it is another session under the same id — nothing more was "
                        "copied for it"
                    )
            missing = rows[len(theirs) :]
            if missing:
                dst.write(missing, session=meta if new_session else None)
                new_session = False
                appended += len(missing)
            copied += len(rows)
        if new_session:
            dst.write([], session=meta)
        ahead = not appended and there is not None and dst.raw_rows(session_id, start=copied, limit=1)
        outcome: Outcome = (
            "copied" if there is None else "extended" if appended else "ahead" if ahead else "up to date"
        )
        return CopyResult(session_id, outcome, appended, copied)
    finally:
        lease.release()
