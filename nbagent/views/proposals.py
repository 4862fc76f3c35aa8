"""Proposed cells in the view model (SPEC §9.7): a ``propose_cell`` call the log recorded becomes a
``proposal`` node under its step, which the painters show with Insert below / Insert and run / Copy.

A proposal is numbered ``TURN.K``: the K-th ``propose_cell`` call of turn TURN, counted in the order
the calls were logged. The tool counts the same way when it answers (:func:`next_proposal_id`), so
the id the model reads in its result is the id the views show and the id a click names, and a fold
that starts at a turn's beginning (a live cell) numbers as a fold of the whole session does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from nbagent._json import storable
from nbagent.log.events import TOOL_CALL, TURN_START, Event, ToolCallEvent, TurnStart, parse_event
from nbagent.views.escape import escape_html
from nbagent.views.schema import ProposalCell, ProposalNode, ToolNode
from nbagent.views.text import clip

PROPOSE_CELL = "propose_cell"
"""The built-in tool's name (``nbagent.notebook.tools.proposals``)."""

NOTE_CHARS = 500
"""Characters of a proposal's note shown at most."""

DONE = ("inserted", "inserted-and-ran")
"""What the user can have done with a proposal: the ``action`` of the ``notebook`` message saying so."""


def proposal_done(source: Mapping[str, Any] | None) -> tuple[str, str, int | None] | None:
    """``(proposal id, action, In[n] it went below)`` when a message's source says the user
    inserted a proposal."""
    if not source or source.get("kind") != "notebook" or source.get("action") not in DONE:
        return None
    pid, below = source.get("proposal"), source.get("below")
    if not isinstance(pid, str):
        return None
    return pid, source["action"], below if type(below) is int else None


def done_words(n: Mapping[str, Any]) -> str:
    """What a proposal's row says once the user inserted it (the words the click itself shows)."""
    below = n.get("done_below")
    where = f"below In [{below}]" if type(below) is int else "below the cell that asked"
    return f"inserted and ran {where}" if n.get("done") == "inserted-and-ran" else f"inserted {where}"


def proposal_id(turn: int, index: int) -> str:
    """The id of turn ``turn``'s ``index``-th proposal (counting from 1)."""
    return f"{turn}.{index}"


def next_proposal_id(events: Iterable[Event]) -> str | None:
    """The id of the newest ``propose_cell`` call of the last turn in ``events`` (the log as the tool
    sees it while it runs: its own call is logged already), or ``None`` outside a turn."""
    turn, count = None, 0
    for event in events:
        if event.type not in (TURN_START, TOOL_CALL):
            continue
        match parse_event(event):
            case TurnStart(turn=started):
                turn, count = started, 0
            case ToolCallEvent(name=name) if name == PROPOSE_CELL:
                count += 1
    if turn is None or count == 0:
        return None
    return proposal_id(turn, count)


def proposed_code(arguments: str) -> tuple[str, str] | None:
    """``(code, note)`` from a ``propose_cell`` call's JSON arguments, or ``None`` when they are not
    the tool's (a failed call shows no proposal)."""
    try:
        parsed = storable(json.loads(arguments))  # a lone surrogate (a \ud800 escape) shows as U+FFFD
    except ValueError:
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("code"), str):
        return None
    note = parsed.get("note")
    return parsed["code"], clip(note, NOTE_CHARS) if isinstance(note, str) else ""


def proposal_node(tool: ToolNode, pid: str, seq: int, cell: ProposalCell | None) -> ProposalNode | None:
    """The ``proposal`` node for a ``propose_cell`` tool node whose result came back without an error;
    ``cell`` is the turn's cell (``{execution_count, cell_id}`` of the prompt that started it)."""
    found = proposed_code(tool["arguments"])
    if found is None:
        return None
    code, note = found
    where = (
        f" below In[{cell['execution_count']}]" if cell and cell.get("execution_count") is not None else ""
    )
    return ProposalNode(
        id=f"proposal-{pid}",
        type="proposal",
        parent=tool["parent"],
        seq=seq,
        proposal=pid,
        call_id=tool["call_id"],
        code=code,
        note=note,
        cell=ProposalCell(**cell) if cell else None,
        text=f"proposed cell {pid}{where}: the user decides (Insert below, Insert and run, Copy)",
    )


def turn_cell(source: Mapping[str, Any] | None) -> ProposalCell | None:
    """The cell a user message came from (``source.cell`` of a typed prompt), if it says."""
    if not source or source.get("kind") != "user" or not isinstance(source.get("cell"), Mapping):
        return None
    return ProposalCell(**source["cell"])


def proposal_html(n: Mapping[str, Any]) -> str:
    """A proposal in the static HTML: its words and its code, escaped, without buttons (a saved
    output has no notebook to insert into; the code can be selected and copied)."""
    note = f'<span class="nba-line">{escape_html(n.get("note") or "")}</span>' if n.get("note") else ""
    done = n.get("done")
    said = f'<span class="nba-muted">{escape_html(done_words(n))}</span>' if done in DONE else ""
    return (
        f'<div class="nba-item nba-proposal" data-id="{escape_html(n["id"])}" '
        f'data-proposal="{escape_html(n["proposal"])}" data-state="{escape_html(done or "proposed")}">'
        f'<div class="nba-row">'
        f'<span class="nba-badge" data-kind="notebook">proposed cell {escape_html(n["proposal"])}</span>'
        f"{note}{said}</div><pre>{escape_html(n['code'])}</pre></div>"
    )


def proposal_lines(n: Mapping[str, Any], indent: str) -> list[str]:
    """A proposal as text: its words, then its code indented."""
    done = n.get("done")
    lines = [f"{indent}  ✎ {n['text']}" + (f" — {done_words(n)}" if done in DONE else "")]
    if n.get("note"):
        lines.append(f"{indent}    {n['note']}")
    return lines + [f"{indent}    │ {line}" for line in str(n["code"]).splitlines()]
