"""Approval questions shown in the cell whose turn asked them (SPEC §9.4).

A cell's output can only be changed after the cell has finished through a display it created while it
ran (front ends route ``update_display_data`` by display id). So ``%followup`` and ``%steer`` reserve
an empty display under their live turn view when the session has a tool that needs approval; when
that turn asks, the display becomes the prompt widget, and once decided a static record of the
decision (code and outcome), which a saved notebook keeps without any widget state.

Questions arrive on the agent loop's thread; displays are published there in a fresh context, as
the live turn view does, so the kernel stamps them with whatever request it serves now.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbagent.notebook.approvals import Approvals, Question, Settled

if TYPE_CHECKING:
    from nbagent.agent import Agent
    from nbagent.notebook.live import LiveTurn

log = logging.getLogger("nbagent.notebook")

KEPT_SLOTS = 64
"""Reserved displays remembered at most (the oldest finished ones are forgotten first)."""


@dataclass
class _Slot:
    view: LiveTurn
    handle: Any
    widget: Any = None
    question: Question | None = None
    records: list[tuple[dict[str, Any], str, str]] = field(default_factory=list)


class ApprovalPrompts:
    """Reserves a display per delivered message and shows its turn's questions there."""

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()

    def reserve(self, view: LiveTurn) -> None:
        """Call from the delivering cell, right after the live view is shown (main thread)."""
        agent = view.agent
        if not isinstance(agent.approver, Approvals) or not any(
            t.requires_approval for t in agent.tools.values()
        ):
            return
        from IPython.display import display

        handle = display({"text/plain": ""}, raw=True, display_id=True)
        with self._lock:
            self._slots[view.message.id] = _Slot(view, handle)
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
        publish: Callable[[], None]
        if isinstance(what, Question):
            publish = lambda: self._ask(slot, desk, what)  # noqa: E731
        else:
            publish = lambda: self._settle(slot, what)  # noqa: E731
        try:
            contextvars.Context().run(publish)
        except Exception:  # a display problem never decides an approval
            log.warning("nbagent could not show an approval prompt", exc_info=True)

    def _slot_for(self, agent: Agent, question: Question) -> _Slot | None:
        with self._lock:
            for slot in reversed(self._slots.values()):
                if slot.view.agent is agent and question.turn is not None and slot.view.turn == question.turn:
                    return slot
        return None

    def _ask(self, slot: _Slot, desk: Approvals, question: Question) -> None:
        from nbagent.widgets.approval import ApprovalWidget

        widget = ApprovalWidget(
            _data(question),
            decide=lambda outcome, approval_id, remember: desk.decide(
                outcome,  # type: ignore[arg-type]
                approval_id,
                by="clicked in the notebook",
                remember=remember,
            ),
            seen=desk.seen,
            history=slot.records,
        )
        old, slot.widget, slot.question = slot.widget, widget, question
        if old is not None:
            old.close()
        slot.handle.update(widget)

    def _settle(self, slot: _Slot, settled: Settled) -> None:
        from nbagent.widgets.approval import settled_bundle

        question = settled.question
        if slot.widget is not None and slot.question is not None and slot.question.id == question.id:
            slot.widget.settle(settled.outcome, settled.sentence)  # a stale view shows it too
        slot.records.append((_data(question), settled.outcome, settled.sentence))
        slot.handle.update(settled_bundle(slot.records), raw=True)

    def _prune(self) -> None:
        while len(self._slots) > KEPT_SLOTS:
            key = next((k for k, s in self._slots.items() if s.view.final), next(iter(self._slots)))
            slot = self._slots.pop(key)
            if slot.widget is not None:
                slot.widget.close()


def _data(question: Question) -> dict[str, Any]:
    return {
        "id": question.id,
        "tool": question.tool,
        "turn": question.turn,
        "code": question.code,
        "arguments": question.arguments,
    }
