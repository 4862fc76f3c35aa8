"""Forks: a new session that begins with a copy of another's log up to a quiet point (SPEC §11.1).

The child's log is the parent's events ``0..S`` (same seq, time, type and data) and then one
``session/forked {parent, at: S, turn?}``. The parent is only read. The copy runs inside the store
when the child stays there (:mod:`nbagent.store.prefix`).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from nbagent import _json
from nbagent.core.events import REQUEST_HEADER, TURN_END, TURN_START, RequestHeader, SessionForked
from nbagent.core.tools import Tool
from nbagent.errors import NbagentError, SessionNotFoundError
from nbagent.models.base import Model
from nbagent.store.base import SessionStore, open_store
from nbagent.store.prefix import copy_prefix

if TYPE_CHECKING:
    from nbagent.core.agent import Agent
    from nbagent.views.diff import TurnDiff

PathLike = str | os.PathLike[str]


def fork_session(
    path: PathLike,
    session_id: str,
    *,
    before_turn: int | None = None,
    at: int | None = None,
    new_session_id: str | None = None,
    model: Model | str | None = None,
    to: PathLike | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    system: str | None = None,
) -> Agent:
    """Fork ``session_id`` of the store at ``path`` (into ``to`` when given) and open the child.

    Exactly one of ``before_turn`` (S = the seq before turn N's ``turn/start``) and ``at`` (a
    quiet point: no turn open at S) says where. Opens no turn; the parent is never written.
    """
    from nbagent.session import resume_session

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
        recorded = header.model if header is not None and header.model else meta[5]
        dst = src if to is None else open_store(to, "create")
        try:
            if dst.session_row(child_id) is not None:
                raise NbagentError(f"session {child_id} already exists in {dst.location}; pick another id")
            now = int(time.time() * 1000)
            name = model if isinstance(model, str) else model.name if model is not None else recorded
            row = (child_id, now, meta[2], session_id, meta[4], name, meta[6] or _json.dumps({}))
            forked = SessionForked(session_id, stop, turn)
            own = [(child_id, stop + 1, now, forked.type, _json.dumps(forked.to_json()), None)]
            copy_prefix(src, dst, session_id, stop, row, own)
        finally:
            if dst is not src:
                dst.close()
    finally:
        src.close()
    if system is None and header is not None:
        system = header.system
    return resume_session(path if to is None else to, child_id, model=model, tools=tools, system=system)


def fork_point(
    store: SessionStore, session_id: str, *, before_turn: int | None, at: int | None
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


def _turn_spans(store: SessionStore, session_id: str, count: int) -> list[tuple[int, int, int | None]]:
    """Each turn as ``(number, seq of turn/start, seq of turn/end or None)``, in log order."""
    spans: list[tuple[int, int, int | None]] = []
    for ev in store.events(session_id, stop=count, types=[TURN_START, TURN_END]):
        if ev.type == TURN_START:
            spans.append((int(ev.data["turn"]), ev.seq, None))
        elif spans and spans[-1][2] is None:
            spans[-1] = (spans[-1][0], spans[-1][1], ev.seq)
    return spans


def _last_header(store: SessionStore, session_id: str, stop: int) -> RequestHeader | None:
    headers = store.events(session_id, stop=stop + 1, types=[REQUEST_HEADER])
    return RequestHeader.from_json(headers[-1].data) if headers else None


def diff(a: Agent, b: Agent | str, *, turn_a: int, turn_b: int | None = None) -> TurnDiff:
    """Turn ``turn_a`` of ``a`` beside turn ``turn_b`` (default: the same number) of ``b`` — an
    agent, or a session id in ``a``'s store (SPEC §11.3)."""
    from nbagent.views.diff import turn_diff

    turn_b = turn_a if turn_b is None else turn_b
    if isinstance(b, str):
        store = a.driver.file
        if store is None:
            raise NbagentError("an in-memory session has no store to find session " + b)
        reader = store.reader()
        try:
            if reader.session_row(b) is None:
                raise SessionNotFoundError(f"no session {b} in {reader.location}; see list_sessions()")
            events_b, name_b = reader.events(b), b
        finally:
            reader.close(checkpoint=False)
    else:
        events_b, name_b = list(b.events), b.session_id
    return turn_diff(a.events, events_b, turn_a=turn_a, turn_b=turn_b, names=(a.session_id, name_b))
