"""Followups carried over a kernel restart: said by the first magic, run by the next waking one.

A kernel that stops (restart, crash) leaves its pending messages in the session file. The resumed
session does not start them on its own: the first magic says what is pending, and the next waking
magic (``%followup``, ``%steer`` or ``%agent run``) starts them first, each followup with its live view
and its approval prompts in that cell, so none runs as a turn no cell shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbagent.log.events import NEXT_STEP, NEXT_TURN
from nbagent.views.inbox import inbox_item
from nbagent.views.labels import captured_in
from nbagent.views.text import first_line, plural

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nbagent.agent import Agent
    from nbagent.log.events import Event
    from nbagent.log.messages import UserMessage

RESTART = "from before the restart"
"""Where followups carried into a resumed session come from, after a kernel restart (the default);
``%agent resume`` and ``%agent fork`` say where theirs come from instead."""
TITLE_LIMIT = 60
"""Characters of a pending message's first line shown in one-line summaries."""


def quoted(message: UserMessage) -> str:
    """A message's first line, cut, in «guillemets»."""
    return f"«{first_line(message.plain_text, TITLE_LIMIT)}»"


def still_pending(agent: Agent, carried: list[UserMessage]) -> list[UserMessage]:
    """The carried-over followups that are still waiting in ``next-turn`` (none was claimed or removed)."""
    waiting = {m.id for m in agent.inbox.next_turn}
    return [m for m in carried if m.id in waiting]


def cut_short(events: Sequence[Event]) -> int | None:
    """The number of the session's last turn if the kernel stopping cut it short: it was closed with
    its session (``aborted``, cause ``closed``) or repaired on resume (``interrupted``)."""
    from nbagent.log.events import TurnEnd, parse_event

    for event in reversed(events):
        if event.type != "turn/end":
            continue
        end = parse_event(event)
        if isinstance(end, TurnEnd) and (end.kind == "interrupted" or end.cause == "closed"):
            return end.turn
        return None
    return None


def carried_line(agent: Agent, carried: list[UserMessage], since: str = RESTART) -> str | None:
    """What the first magic after a resume says about the work left from before it (``since``)."""
    steps = len(agent.inbox.next_step)
    if not carried and not steps:
        return None
    parts = []
    if carried:
        verb = "is" if len(carried) == 1 else "are"
        parts.append(
            f"{plural(len(carried), 'followup')} {since} {verb} pending: "
            + ", ".join(quoted(m) for m in carried)
        )
    if steps:
        parts.append(f"{plural(steps, 'message')} for the next step {'is' if steps == 1 else 'are'} pending")
    return (
        "nbagent: "
        + "; ".join(parts)
        + " — the next %followup, %steer or %agent run starts it first, shown in that cell"
    )


def pending_lines(agent: Agent, carried: list[UserMessage], since: str = RESTART) -> list[str]:
    """``%agent status``: the running turn, each pending message, and what runs next."""
    lines = []
    carried_ids = {m.id for m in carried}
    running = _running_turn(agent)
    if running is not None:
        lines.append(f"running: turn {running[0]} {running[1]}")
    for message in agent.inbox.next_step:
        lines.append(f"pending: next step {pending_item(message, NEXT_STEP)}")
    for message in agent.inbox.next_turn:
        before = f" ({since})" if message.id in carried_ids else ""
        lines.append(f"pending: followup {pending_item(message, NEXT_TURN)}{before}")
    if running is None and agent.inbox.has_pending:
        if carried_ids & {m.id for m in agent.inbox.next_turn}:
            lines.append("runs next: the next %followup, %steer or %agent run starts it")
        else:
            lines.append("runs next: %agent run starts the pending messages")
    elif running is not None and agent.inbox.next_turn:
        lines.append("runs next: the pending followups, in order, after this turn")
    return lines


def pending_item(message: UserMessage, queue: str) -> str:
    """One pending message as the inbox widget names it: a typed prompt quoted; captured context
    by its badge and label (a frame's name, shape and library), the cell it was captured in, and
    its tokens, so three injections of one frame can be told apart."""
    if (message.source or {}).get("kind") == "user":
        return quoted(message)
    item = inbox_item(message, queue)
    where = captured_in(message)
    parts = [item["summary"], f"from {where}" if where else "", item["tokens_text"]]
    return " · ".join(p for p in parts if p)


def _running_turn(agent: Agent) -> tuple[int, str] | None:
    """The open turn's number and its first claimed message, quoted, if a turn is open."""
    if agent.status != "running":
        return None
    from nbagent.core.projections import derive_history
    from nbagent.log.events import TURN_END, TURN_START, TurnStart, parse_event
    from nbagent.log.messages import UserMessage

    events = agent.events
    start = next((i for i in range(len(events) - 1, -1, -1) if events[i].type == TURN_START), None)
    if start is None or any(e.type == TURN_END for e in events[start:]):
        return None
    claimed = [m for m in derive_history(events[start:]) if isinstance(m, UserMessage)]
    typed = [m for m in claimed if m.kind == "user"] or claimed
    opened = parse_event(events[start])
    assert isinstance(opened, TurnStart)  # found by its type above
    return opened.turn, quoted(typed[0]) if typed else ""
