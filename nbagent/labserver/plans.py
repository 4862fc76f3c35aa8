"""The "What if…" editor's view model for the session tab (SPEC §11.4): a finished turn's arrivals
grouped by the step that saw them (``nbagent.forks.editor_plan``), read from the store.

``GET nbagent/api/sessions/<id>/plan?file=FILE&turn=N`` (default: the last finished turn). The
replay itself runs in a notebook's kernel (the tab asks one on the ``nbagent.whatif`` comm target);
the server only reads.
"""

from __future__ import annotations

from typing import Any

from nbagent.errors import SessionNotFoundError
from nbagent.forks.editor_plan import editor_plan, finished_turns
from nbagent.labserver.sessions import Readable
from nbagent.store.reading import read_events


def plan_answer(path: Readable, session_id: str, turn: int | None) -> dict[str, Any]:
    """``{plan, turns}``: the editor's plan of ``turn`` and the session's finished turns; a turn the
    session has not finished raises ``SessionNotFoundError`` naming those it has (answered 404)."""
    events = read_events(path, session_id)
    finished = finished_turns(events)
    if not finished:
        return {"plan": None, "turns": [], "why": f"session {session_id[:8]} has no finished turn yet"}
    try:
        plan = editor_plan(events, turn if turn is not None else finished[-1])
    except ValueError as exc:
        raise SessionNotFoundError(str(exc)) from None
    return {"plan": plan, "turns": finished}
