"""Logs that make every node type of the timeline: the golden session of tests/test_event_json.py
(every core event type and variant, as stored), and a fork of it that replays a turn, proposes a
cell the user then inserts, warns of a full context window and moves a pending message.

Used by tests/test_view_types.py to check that what the fold writes is what nbagent/views/schema.py
declares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbagent.log.events import Event

GOLDEN = Path(__file__).parent / "golden" / "events_session.jsonl"
START = 1_714_000_000_000


def golden_events() -> list[Event]:
    """The golden session's rows as a log (times made up, 137 ms apart)."""
    rows = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]
    return [
        Event(i, START + 137 * i, type_, json.loads(data)) for i, (type_, data, _pending) in enumerate(rows)
    ]


def _message(mid: str, text: str, source: dict[str, Any]) -> dict[str, Any]:
    return {"id": mid, "role": "user", "content": [{"type": "text", "text": text}], "source": source}


def fork_events() -> list[Event]:
    """A fork's own events: forked, a replayed turn with a proposal and a warning, then the user's
    insertion of the proposed cell (a ``notebook`` message) and a pending message moved."""
    prompt = _message("f-1", "plot it", {"kind": "user", "cell": {"execution_count": 5, "cell_id": "c-abc"}})
    note = _message("f-2", "prices are in EUR", {"kind": "cell", "label": "note"})
    call = {"type": "tool-call", "id": "p1", "name": "propose_cell",
            "arguments": json.dumps({"code": "df.plot()", "note": "a first look"})}  # fmt: skip
    answer = {"id": "f-3", "role": "assistant", "content": [call],
              "source": {"kind": "model", "provider": "scripted", "model": "scripted"}}  # fmt: skip
    result = {"id": "f-4", "role": "user", "source": {"kind": "tool", "call_id": "p1"},
              "content": [{"type": "tool-result", "tool_call_id": "p1",
                           "content": [{"type": "text", "text": "Proposed cell 2.1 to the user"}]}]}  # fmt: skip
    warning = {"threshold": 0.9, "estimate": 950, "window": 1000,
               "largest": [{"source": "user", "label": "", "tokens": 900}]}  # fmt: skip
    done = _message(
        "f-5", "inserted", {"kind": "notebook", "action": "inserted-and-ran", "proposal": "2.1", "below": 6}
    )
    plan: list[tuple[str, dict[str, Any]]] = [
        ("session/forked", {"parent": "parent-session", "at": 9, "turn": 2}),
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [prompt]}),
        ("agent/inbox/spliced", {"target": "next-step", "start": 0, "inserted": [note]}),
        (
            "session/replayed",
            {
                "turn": 2,
                "parent_turn": 2,
                "drop": [],
                "move": {"f-2": 0},
                "add": [],
                "labels": {"f-2": "note"},
            },
        ),
        ("turn/start", {"turn": 2}),
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removed_count": 1, "inserted": []}),
        ("agent/inbox/spliced", {"target": "next-step", "start": 0, "removed_count": 1, "inserted": []}),
        ("step/start", {"turn": 2, "step": 1}),
        ("user/message", prompt),
        ("user/message", note),
        (
            "request/estimate",
            {
                "turn": 2,
                "step": 1,
                "total": 950,
                "by_source": {"user": 900, "cell": 50},
                "counter": "chars",
                "window": 1000,
                "warning": warning,
            },
        ),
        (
            "assistant/message",
            {"turn": 2, "step": 1, "message": answer, "usage": {"input_tokens": 9, "output_tokens": 3}},
        ),
        (
            "tool/call",
            {"turn": 2, "step": 1, "call_id": "p1", "name": "propose_cell", "arguments": call["arguments"]},
        ),
        ("tool/result", {"turn": 2, "step": 1, "message": result}),
        ("step/end", {"turn": 2, "step": 1}),
        ("turn/end", {"turn": 2, "reason": {"kind": "completed"}}),
        ("agent/inbox/spliced", {"target": "next-step", "start": 0, "inserted": [done]}),
        (
            "agent/inbox/spliced",
            {"target": "next-step", "start": 0, "removed_count": 1, "inserted": [], "outcome": "moved"},
        ),
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [done]}),
    ]
    return [Event(i, START + 211 * i, type_, data) for i, (type_, data) in enumerate(plan)]
