"""Forks and turn diffs at the session level (SPEC §11.1, §11.3): the child opened as an agent."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from nbagent.core.tools import Tool
from nbagent.errors import NbagentError, SessionNotFoundError
from nbagent.forks.new_fork import create_fork
from nbagent.models.base import Model
from nbagent.store.location import Where

if TYPE_CHECKING:
    from nbagent.agent import Agent
    from nbagent.store.base import SessionStore
    from nbagent.views.diff import TurnDiff


def fork_session(
    path: Where,
    session_id: str,
    *,
    before_turn: int | None = None,
    at: int | None = None,
    new_session_id: str | None = None,
    model: Model | str | None = None,
    to: Where | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    system: str | None = None,
) -> Agent:
    """Fork ``session_id`` of the store at ``path`` (into ``to`` when given) and open the child.

    Exactly one of ``before_turn`` (S = the seq before turn N's ``turn/start``) and ``at`` (a
    quiet point: no turn open at S) says where. Opens no turn; the parent is never written. The
    child's model is the one the prefix last recorded (by name) unless ``model`` is given; its
    system prompt the prefix's last one unless ``system`` is given.
    """
    from nbagent.session import resume_session

    name = model if isinstance(model, str) else model.name if model is not None else None
    made = create_fork(path, session_id, before_turn=before_turn, at=at, new_session_id=new_session_id,
                       model_name=name, to=to)  # fmt: skip
    if system is None and made.header is not None:
        system = made.header.system
    return resume_session(made.location, made.session_id, model=model, tools=tools, system=system)


def diff(a: Agent, b: Agent | str, *, turn_a: int, turn_b: int | None = None) -> TurnDiff:
    """Turn ``turn_a`` of ``a`` beside turn ``turn_b`` (default: the same number) of ``b`` — an
    agent, or a session id in ``a``'s store (SPEC §11.3)."""
    from nbagent.views.diff import turn_diff

    turn_b = turn_a if turn_b is None else turn_b
    if isinstance(b, str):
        # the session layer builds every Agent over a SessionStore
        store = cast("SessionStore | None", a.driver.file)
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
