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

from nbagent.errors import SessionNotFoundError
from nbagent.labserver.sessions import Readable
from nbagent.store.reading import list_sessions, read_events
from nbagent.views.diff import diff_json, turn_diff, turn_numbers


def diff_answer(
    path: Readable, session_id: str, turn: int | None, against: str | None, against_turn: int | None
) -> dict[str, Any]:
    """The diff view model of ``session_id`` against its parent (or ``against``), with the turns of
    both sides; raises ``SessionNotFoundError`` naming what is missing (a turn: with the turns that
    side has, answered 404 with that message)."""
    rows = {r.id: r for r in list_sessions(path)}
    name = path.name if isinstance(path, Path) else str(path)
    if session_id not in rows:
        raise SessionNotFoundError(f"no session {session_id} in {name}")
    other = against or rows[session_id].parent
    if other is None:
        why = (
            f"session {session_id[:8]} is not a fork: it has no parent to compare with "
            "(fork it with %agent fork, or pass against=SESSION)"
        )
        return {"diff": None, "why": why}
    if other not in rows:
        raise SessionNotFoundError(f"no session {other} in {name} (the parent of {session_id[:8]})")
    events_b, events_a = read_events(path, session_id), read_events(path, other)
    turns_b, turns_a = turn_numbers(events_b), turn_numbers(events_a)
    if not turns_b:
        why = f"session {session_id[:8]} has no turn yet to compare (replay one: %agent replay N)"
        return {"diff": None, "why": why}
    turn_b = turn if turn is not None else turns_b[-1]
    turn_a = against_turn if against_turn is not None else turn_b
    if turn_b not in turns_b:  # the session asked about first
        have = ", ".join(map(str, turns_b))
        raise SessionNotFoundError(f"session {session_id[:8]} has no turn {turn_b} (its turns: {have})")
    try:  # a turn a side does not have: the page shows the message (it names the turns it has)
        d = turn_diff(events_a, events_b, turn_a=turn_a, turn_b=turn_b, names=(other, session_id))
    except ValueError as exc:
        raise SessionNotFoundError(str(exc)) from None
    model = diff_json(d)
    return {"diff": model, "turns_a": turns_a, "turns_b": turns_b, "turn_a": turn_a, "turn_b": turn_b}
