"""Approval questions shown in the cell whose turn asked them (SPEC §9.4).

A cell's output can only change after the cell has finished through a display it created while it
ran (front ends route ``update_display_data`` by display id). The live turn view of ``%followup`` and
``%steer`` is such a display, so the question goes there: :meth:`ApprovalPrompts.reserve` wraps the
view's surface, and while a question of its turn is pending the display becomes the prompt widget,
which shows the turn as it stood (the view's HTML) above the code and its buttons. Once decided, the
display is the turn view again with a static record of each decision below it (code and outcome), which
a saved notebook keeps without any widget state. The cell keeps one output, as before.

Questions arrive on the agent loop's thread; they are published there in a fresh context, as the
live turn view does, so the kernel stamps them with whatever request it serves now.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from typing import TYPE_CHECKING, Any

from nbagent.notebook.tools.approvals import Approvals, Question, Settled

if TYPE_CHECKING:
    from nbagent.agent import Agent
    from nbagent.notebook.magics.live_turn import LiveTurn, Surface

log = logging.getLogger("nbagent.notebook")

KEPT_SLOTS = 64
"""Cells remembered at most (the oldest finished ones are forgotten first)."""

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class _Slot:
    """A live turn view's surface, with the turn's approval prompt and records laid over it."""

    def __init__(self, view: LiveTurn, inner: Surface) -> None:
        self.view = view
        self.inner = inner
        self.widget: Any = None
        self.question: Question | None = None
        self.records: list[tuple[dict[str, Any], str, str]] = []
        self._data: dict[str, Any] = {}
        self._lock = threading.Lock()

    # -- the Surface protocol (called by the live view) -----------------------------------------

    def show(self, data: dict[str, Any]) -> None:
        with self._lock:
            self._data = dict(data)
            self.inner.show(self._composed())

    def update(self, data: dict[str, Any]) -> None:
        with self._lock:
            self._data = dict(data)
            self._publish()

    # -- the desk's questions ---------------------------------------------------------------------

    def ask(self, question: Question, widget: Any) -> None:
        with self._lock:
            old, self.widget, self.question = self.widget, widget, question
            self._publish()
        if old is not None:
            old.close()

    def settle(self, settled: Settled) -> None:
        from nbagent.widgets.approval import question_data

        with self._lock:
            pending = self.question is not None and self.question.id == settled.question.id
            if pending and self.widget is not None:
                self.widget.settle(settled.outcome, settled.sentence)  # a stale view shows it too
            if pending:
                self.question = None
            self.records.append((question_data(settled.question), settled.outcome, settled.sentence))
            self._publish()

    # -- composing (under the lock) ---------------------------------------------------------------

    def _publish(self) -> None:
        self.inner.update(self._composed())

    def _composed(self) -> dict[str, Any]:
        from IPython.core.formatters import format_display_data

        from nbagent.views import TIMELINE_MIME

        data = self._data
        if self.records:
            data = with_records(data, self.records)
        if self.question is None or self.widget is None:
            return data
        turn_html = str(self._data.get("text/html", ""))
        self.widget.context_html = turn_html
        prompt, _ = format_display_data(self.widget)
        composed = {
            WIDGET_VIEW: prompt[WIDGET_VIEW],
            "text/plain": f"{data.get('text/plain', '')}\n{prompt['text/plain']}",
            "text/html": f"{data.get('text/html', '')}{prompt['text/html']}",
        }
        if TIMELINE_MIME in data:  # the turn as it stands: painted until the widget shows, and how a
            composed[TIMELINE_MIME] = data[TIMELINE_MIME]  # front end finds the turn after a restart
        return composed


def with_records(data: dict[str, Any], records: list[tuple[dict[str, Any], str, str]]) -> dict[str, Any]:
    """The turn's bundle with the cell's decided approvals: each approval node of the timeline JSON
    says its decision in the cell's words ("run_code approved (allowed for this session)"), and the
    HTML and text end with a static record of each (code and outcome). The same three MIME types as
    every other output, so a saved cell keeps its view (SPEC §9.2)."""
    from nbagent.views import TIMELINE_MIME
    from nbagent.views.html import live_turn_html
    from nbagent.views.plain import live_turn_text
    from nbagent.widgets.approval import settled_bundle

    done = settled_bundle(records)
    bundle = data.get(TIMELINE_MIME)
    if not isinstance(bundle, dict):
        return {
            "text/plain": f"{data.get('text/plain', '')}\n{done['text/plain']}",
            "text/html": f"{data.get('text/html', '')}{done['text/html']}",
        }
    said = [(q.get("call_id"), q.get("tool"), sentence) for q, _state, sentence in records]
    nodes = []
    for node in bundle["nodes"]:
        if node.get("type") == "approval" and node.get("outcome"):
            match = next((r for r in said if r[:2] == (node.get("call_id"), node.get("tool"))), None)
            if match is not None:
                said.remove(match)
                node = {**node, "text": match[2]}
        nodes.append(node)
    bundle = {**bundle, "nodes": nodes}
    return {
        TIMELINE_MIME: bundle,
        "text/plain": f"{live_turn_text(bundle)}\n{done['text/plain']}",
        "text/html": live_turn_html(bundle) + done["text/html"],
    }


class ApprovalPrompts:
    """Lays each question of a desk over the live view of the cell whose turn asked it."""

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()

    def reserve(self, view: LiveTurn) -> None:
        """Call from the delivering cell, right after the live view is shown (main thread)."""
        agent = view.agent
        if not isinstance(agent.approver, Approvals):
            return
        slot = _Slot(view, view.surface)
        view.surface = slot
        with self._lock:
            self._slots[view.message.id] = slot
            self._prune()

    def attach(self, agent: Agent, desk: Approvals) -> None:
        """Show ``desk``'s questions in the cells of ``agent``'s turns."""
        desk.listeners.append(lambda what: self._on_desk(agent, desk, what))

    # -- on the agent loop -------------------------------------------------------------------------

    def _on_desk(self, agent: Agent, desk: Approvals, what: Question | Settled) -> None:
        question = what if isinstance(what, Question) else what.question
        slot = self._slot_for(agent, question)
        if slot is None:
            return
        try:
            if isinstance(what, Question):
                contextvars.Context().run(self._ask, slot, desk, what)
            else:
                contextvars.Context().run(slot.settle, what)
        except Exception:  # a display problem never decides an approval
            log.warning("nbagent could not show an approval prompt", exc_info=True)

    def _slot_for(self, agent: Agent, question: Question) -> _Slot | None:
        with self._lock:
            for slot in reversed(self._slots.values()):
                if slot.view.agent is agent and question.turn is not None and slot.view.turn == question.turn:
                    return slot
        return None

    def _ask(self, slot: _Slot, desk: Approvals, question: Question) -> None:
        from nbagent.widgets.approval import ApprovalWidget, question_data

        widget = ApprovalWidget(
            question_data(question),
            decide=lambda outcome, approval_id, remember: desk.decide(
                outcome,  # type: ignore[arg-type]
                approval_id,
                by="clicked in the notebook",
                remember=remember,
                arguments_sha256=question.arguments_sha256,
            ),
            seen=desk.seen,
            history=slot.records,
        )
        slot.ask(question, widget)

    def _prune(self) -> None:
        while len(self._slots) > KEPT_SLOTS:
            key = next((k for k, s in self._slots.items() if s.view.final), next(iter(self._slots)))
            slot = self._slots.pop(key)
            if slot.widget is not None:
                slot.widget.close()
