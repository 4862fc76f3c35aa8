"""Adding an event type touches its record and the view model only; every painting then shows it.

The check is written as the change itself: a record for a new event (here ``example/compacted``),
a case in the fold that turns it into a node with ready-made words, and nothing else (defining the
record registers it with ``parse_event``; its JSON is its fields). The HTML,
text and Markdown renderings show it unchanged; the widget's JS paints such nodes the same way
(``build`` falls back to a mark with the node's ``text``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import nbagent
from nbagent.log.events import Event, Record, parse_event
from nbagent.models import ScriptedModel
from nbagent.views import Timeline, TurnView, timeline_html, transcript_markdown
from nbagent.views.plain import live_turn_text

PACKAGE = Path(nbagent.__file__).parent


@dataclass(frozen=True, slots=True)
class Compacted(Record):
    """The new event's record (in the real change: in nbagent/log/events.py)."""

    type: ClassVar[str] = "example/compacted"  # (registered for the whole test run: a name no test uses)
    turn: int
    removed: int


class TimelineWithCompaction(Timeline):
    """The view model's one new case (in the real change: a ``case`` in ``Timeline._fold``)."""

    def _fold(self, ev: object) -> None:
        if isinstance(ev, Compacted):
            record = ev
            self._add({"id": f"compacted-{record.seq}", "type": "compaction", "parent": f"turn-{record.turn}",
                       "seq": record.seq, "text": f"compacted {record.removed} older messages"})  # fmt: skip
            return
        super()._fold(ev)


async def test_a_new_event_type_reaches_every_painting_through_its_record_and_the_view_model() -> None:
    agent = nbagent.open_session(None, model=ScriptedModel(["ok"]))
    agent.followup("go")
    await agent.when_idle()
    events = list(agent.events)
    await agent.close()
    at = next(i for i, e in enumerate(events) if e.type == "step/start")
    new = Event(at, events[at].time, Compacted.type, Compacted(1, 12).to_json())
    assert new.data == {"turn": 1, "removed": 12}
    parsed = parse_event(new)
    assert parsed == Compacted(1, 12) and (parsed.seq, parsed.time) == (at, events[at].time)
    events = [*events[:at], new, *(Event(e.seq + 1, e.time, e.type, e.data) for e in events[at:])]

    timeline = TimelineWithCompaction()
    timeline.feed(events)
    bundle = timeline.to_json()
    assert [n["text"] for n in bundle["nodes"] if n["type"] == "compaction"] == [
        "compacted 12 older messages"
    ]
    assert 'data-mark="compaction">compacted 12 older messages<' in timeline_html(bundle)
    assert "*compacted 12 older messages*" in transcript_markdown(bundle)
    view = TurnView("followup", "go")
    view.claimed(1)
    view.timeline = TimelineWithCompaction()
    view.feed(events)
    assert "  · compacted 12 older messages" in live_turn_text(view.to_json())


def test_the_folds_read_typed_records_not_event_payloads() -> None:
    """The views, the widgets, the test helpers, owned runs and the demo never subscript or
    ``.get`` an event's ``data``: they match on the records ``parse_event`` gives."""
    folds = [*PACKAGE.joinpath("views").glob("*.py"), *PACKAGE.joinpath("widgets").glob("*.py")]
    folds += [
        PACKAGE / name
        for name in (
            "testing.py",
            "core/runs.py",
            "core/projections.py",
            "labserver/sessions.py",
            "__main__.py",
        )
    ]
    readers = []
    for path in folds:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target = node.value if isinstance(node, ast.Subscript) else None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
            ):
                target = node.func.value
            if isinstance(target, ast.Attribute) and target.attr == "data":
                readers.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert readers == []
