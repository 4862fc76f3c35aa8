"""The view model of one live cell: the message it follows, then the turn that took it.

It is the timeline view model scoped to one turn, so the cell paints what the widget paints (the
same labels, outcomes and reasons, with the same stylesheet), and carries the JSON bundle too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nbagent.log.events import Event
from nbagent.views.bundle import TIMELINE_MIME
from nbagent.views.html import live_turn_html
from nbagent.views.plain import live_turn_text
from nbagent.views.schema import SessionRef, TimelineBundle
from nbagent.views.text import first_line
from nbagent.views.timeline import Timeline

HEADLINE_MAX = 80


class TurnView:
    """Follows one delivered message: ``queued`` in the inbox, then its turn until the turn ends."""

    def __init__(self, verb: str, message_text: str, inbox: Any = None) -> None:
        """``inbox`` (with ``next_step``/``next_turn``) is what is pending when the view starts."""
        self.verb = verb
        self.what = first_line(message_text, HEADLINE_MAX)
        self.timeline = Timeline()
        if inbox is not None:
            self.timeline.seed_pending(inbox.next_step, inbox.next_turn)
        self.turn: int | None = None
        self.discarded = False
        self.progress: str | None = None
        """What a running tool last said of its progress (an MCP progress notification; not logged)."""
        self.session: SessionRef | None = None
        """Where the session lives (``{"id", "file"}``), carried in the bundle so a front end can look
        up the turn's true end after the kernel is gone (docs/timeline-json.md)."""

    def claimed(self, turn: int) -> None:
        """The message was claimed by ``turn``: from now on the view shows that turn."""
        self.turn = turn

    def discard(self) -> None:
        """The message was canceled before the model saw it."""
        self.discarded = True

    def feed(self, events: Iterable[Event]) -> None:
        """Fold events of (or after) the claim; the fold opens the turn if its start came earlier."""
        self.timeline.feed(events)

    @property
    def answer(self) -> str:
        """The last non-empty answer text of the turn (``""`` before there is one)."""
        if self.turn is None:
            return ""
        answers = [
            n for n in self.timeline.turn_nodes(self.turn) if n["type"] == "assistant" and not n["failed"]
        ]
        return next((n["text"] for n in reversed(answers) if n["text"].strip()), "")

    @property
    def final(self) -> bool:
        if self.discarded:
            return True
        node = self.timeline.nodes.get(f"turn-{self.turn}")
        return node is not None and node["type"] == "turn" and node["status"] != "running"

    @property
    def state(self) -> str:
        if self.discarded:
            return "canceled before the model saw it"
        if self.turn is None:
            return "queued"
        return "done" if self.final else "running"

    @property
    def headline(self) -> str:
        where = f"turn {self.turn}" if self.turn is not None else "inbox"
        line = f"{self.verb} «{self.what}» · {where} · {self.state}"
        return f"{line} · {self.progress}" if self.progress and self.state == "running" else line

    def to_json(self, max_text: int | None = 4000) -> TimelineBundle:
        """The one-turn bundle (``scope: {"turn": N}``) with this view's headline."""
        turn = self.turn if self.turn is not None and not self.discarded else -1
        bundle = self.timeline.to_json(turn=turn, headline=self.headline, max_text=max_text)
        if self.turn is None or self.discarded:
            bundle["scope"] = {"turn": None}
            bundle["status"] = "idle"
            bundle["status_text"] = bundle["summary"] = self.state
        bundle["session"] = self.session
        return bundle

    def bundle(self) -> dict[str, Any]:
        """The MIME bundle for ``display``/``update``: text, HTML and the timeline JSON."""
        data = self.to_json()
        return {"text/plain": live_turn_text(data), "text/html": live_turn_html(data), TIMELINE_MIME: data}
