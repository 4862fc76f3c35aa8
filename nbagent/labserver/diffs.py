"""The turn diff for the session tab (SPEC §11.3): a fork's turn beside its parent's, as the view
model the shared painter paints (``nbagent.views.diff.diff_json``).

``GET nbagent/api/sessions/<id>/diff?file=FILE[&turn=N][&against=ID][&against_turn=M]``: side b
is session ``<id>``'s turn ``N`` (default: its last), side a is turn ``M`` (default: ``N``) of
``against`` (default: the session ``<id>`` was forked from). Both logs are read under the caller's
budget; the answer also lists each side's turns, for the tab's turn pickers. A session that is no
fork (or has no turn yet) is no error: the answer's ``diff`` is ``null`` and ``why`` says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbagent.core.events import TurnStart, parse_event
from nbagent.errors import SessionNotFoundError
from nbagent.store.reading import list_sessions, read_events
from nbagent.views.diff import diff_json, turn_diff


def _turns(events: list[Any]) -> list[int]:
    return [r.turn for r in map(parse_event, events) if isinstance(r, TurnStart)]


def diff_answer(
    path: Path, session_id: str, turn: int | None, against: str | None, against_turn: int | None
) -> dict[str, Any]:
    """The diff view model of ``session_id`` against its parent (or ``against``), with the turns of
    both sides; raises ``SessionNotFoundError`` naming what is missing."""
    rows = {r.id: r for r in list_sessions(path)}
    if session_id not in rows:
        raise SessionNotFoundError(f"no session {session_id} in {path.name}")
    other = against or rows[session_id].parent
    if other is None:
        why = (
            f"session {session_id[:8]} is not a fork: it has no parent to compare with "
            "(fork it with %agent fork, or pass against=SESSION)"
        )
        return {"diff": None, "why": why}
    if other not in rows:
        raise SessionNotFoundError(f"no session {other} in {path.name} (the parent of {session_id[:8]})")
    events_b, events_a = read_events(path, session_id), read_events(path, other)
    turns_b, turns_a = _turns(events_b), _turns(events_a)
    if not turns_b:
        why = f"session {session_id[:8]} has no turn yet to compare (replay one: %agent replay N)"
        return {"diff": None, "why": why}
    turn_b = turn if turn is not None else turns_b[-1]
    turn_a = against_turn if against_turn is not None else turn_b
    for sid, wanted, known in ((session_id, turn_b, turns_b), (other, turn_a, turns_a)):
        if wanted not in known:
            raise SessionNotFoundError(f"session {sid[:8]} has no turn {wanted} (its turns: 1–{len(known)})")
    model = diff_json(turn_diff(events_a, events_b, turn_a=turn_a, turn_b=turn_b, names=(other, session_id)))
    return {"diff": model, "turns_a": turns_a, "turns_b": turns_b, "turn_a": turn_a, "turn_b": turn_b}
