"""The store side of a fork (SPEC §11.1): where to cut, and the new session's rows.

:func:`create_fork` writes a session whose log is the parent's events ``0..S`` (same seq, time, type
and data) and then one ``session/forked {parent, at: S, turn?}``; the parent is only read. Opening the
child as an agent is the session layer's part (:func:`nbagent.fork_session`, ``agent.fork``).
"""

from __future__ import annotations

import time
import uuid
from typing import NamedTuple

from nbagent import _json
from nbagent.errors import NbagentError, SessionNotFoundError
from nbagent.forks.log_prefix import copy_prefix
from nbagent.log.events import (
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    RequestHeader,
    SessionForked,
    TurnStart,
    parse_event,
)
from nbagent.store.base import EventRow, StoreReader
from nbagent.store.location import StoreLocation, Where
from nbagent.store.opening import open_store


class Forked(NamedTuple):
    """The new session: its id, the store to open it from, and the prefix's last header."""

    session_id: str
    location: StoreLocation
    header: RequestHeader | None


def create_fork(
    path: Where,
    session_id: str,
    *,
    before_turn: int | None,
    at: int | None,
    new_session_id: str | None,
    model_name: str | None,
    to: Where | None,
    purpose: str | None = None,
) -> Forked:
    """Write the fork of ``session_id`` (into ``to`` when given); exactly one of ``before_turn``
    (S = the seq before turn N's ``turn/start``) and ``at`` (a quiet point) says where."""
    if (before_turn is None) == (at is None):
        raise ValueError("fork needs exactly one of before_turn=N or at=SEQ")
    child_id = uuid.uuid4().hex if new_session_id is None else new_session_id
    if not isinstance(child_id, str) or not child_id.strip():
        raise ValueError(f"new_session_id must be a non-empty str, not {child_id!r}")
    src = open_store(path, "write" if to is None else "read")
    try:
        meta = src.session_tuple(session_id)
        if meta is None:
            raise SessionNotFoundError(f"no session {session_id} in {src.location}; see list_sessions()")
        stop, turn = fork_point(src, session_id, before_turn=before_turn, at=at)
        header = _last_header(src, session_id, stop)
        recorded = header.model if header is not None and header.model else meta.model
        dst = src if to is None else open_store(to, "create")
        try:
            if dst.session_row(child_id) is not None:
                raise NbagentError(f"session {child_id} already exists in {dst.location}; pick another id")
            now = int(time.time() * 1000)
            row = meta._replace(
                id=child_id,
                created_at=now,
                parent=session_id,
                model=model_name or recorded,
                metadata=meta.metadata or "{}",
            )
            forked = SessionForked(session_id, stop, turn, purpose)
            own = [EventRow(child_id, stop + 1, now, forked.type, _json.dumps(forked.to_json()), None)]
            copy_prefix(src, dst, session_id, stop, row, own)
            return Forked(child_id, dst.where, header)
        finally:
            if dst is not src:
                dst.close()
    finally:
        src.close()


def fork_point(
    store: StoreReader, session_id: str, *, before_turn: int | None, at: int | None
) -> tuple[int, int | None]:
    """``(S, turn)``: the last seq to copy and the turn forked before (``None`` for ``at=``)."""
    count, _ = store.tail(session_id) if store.session_row(session_id) else (0, 0)
    opened = _turn_spans(store, session_id, count)
    if before_turn is not None:
        if isinstance(before_turn, bool) or not isinstance(before_turn, int):
            raise ValueError(f"before_turn must be a turn number, not {before_turn!r}")
        for turn, start, _end in opened:
            if turn == before_turn:
                return start - 1, before_turn
        have = ", ".join(str(t) for t, _, _ in opened) or "none"
        raise ValueError(f"session {session_id} has no turn {before_turn} (its turns: {have})")
    assert at is not None
    if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at < count:
        raise ValueError(f"at must be a seq of session {session_id} (0..{count - 1}), not {at!r}")
    for turn, start, end in opened:
        if start <= at and (end is None or at < end):
            after = f"{end}" if end is not None else "none yet (the turn has not ended)"
            raise ValueError(
                f"seq {at} of session {session_id} is inside turn {turn}, not a quiet point; the "
                f"nearest quiet points are {start - 1} (before the turn) and {after} (its turn/end)"
            )
    return at, None


def _turn_spans(store: StoreReader, session_id: str, count: int) -> list[tuple[int, int, int | None]]:
    """Each turn as ``(number, seq of turn/start, seq of turn/end or None)``, in log order."""
    spans: list[tuple[int, int, int | None]] = []
    for ev in store.events(session_id, stop=count, types=[TURN_START, TURN_END]):
        if isinstance(start := parse_event(ev), TurnStart):
            spans.append((start.turn, ev.seq, None))
        elif spans and spans[-1][2] is None:
            spans[-1] = (spans[-1][0], spans[-1][1], ev.seq)
    return spans


def _last_header(store: StoreReader, session_id: str, stop: int) -> RequestHeader | None:
    headers = store.events(session_id, stop=stop + 1, types=[REQUEST_HEADER])
    return RequestHeader.from_json(headers[-1].data) if headers else None
