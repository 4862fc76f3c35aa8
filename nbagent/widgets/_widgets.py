"""The live widgets: anywidget models painting the view model of :mod:`nbagent.views`.

Live notices from the agent are coalesced on its loop (one :class:`~nbagent.views.Coalescer` per
stream); each output also carries the saved views (static HTML, the timeline JSON bundle, text).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from nbagent.agent import Agent, LiveNotice
from nbagent.log.events import ASSISTANT_CHUNK, INBOX_SPLICED, NEXT_STEP, NEXT_TURN, Event
from nbagent.views import (
    TIMELINE_MIME,
    Coalescer,
    Timeline,
    inbox_html,
    inbox_item,
    inbox_model,
    inbox_text,
    timeline_html,
    timeline_json,
    timeline_text,
)
from nbagent.views.html import stylesheet
from nbagent.views.markdown_tree import AnswerTrees
from nbagent.views.schema import InboxModel, TimelineSnapshot
from nbagent.widgets.modules import WidgetModule
from nbagent.widgets.whatif import WhatIf, handle_why
from nbagent.widgets.whatif import handle as whatif_message

log = logging.getLogger("nbagent.widgets")
DELAY = 0.04
"""Seconds a burst of events (a streaming answer) is coalesced into one front-end message."""
REPUBLISH_DELAY = 0.5
"""Seconds changes are gathered before an output's saved views are re-published."""
RUNNING_REPUBLISH_DELAY = 5.0
"""The same while a turn runs (the turn's end re-publishes at once)."""
SAVED_TURNS = 20
"""Turns kept whole in a saved output (older ones keep only their heads)."""
SAVED_TEXT = 2000
"""Characters of each long text kept in a saved output's JSON bundle."""


class _AgentWidget(anywidget.AnyWidget):
    _css = stylesheet()
    uid = traitlets.Unicode().tag(sync=True)
    """Identifies the model across views (front ends key what the user opened by model)."""

    _agent: Agent
    _offs: tuple[Any, ...] = ()

    @traitlets.default("uid")
    def _uid(self) -> str:
        return uuid.uuid4().hex

    def saved_views(self) -> dict[str, Any]:
        """The MIME types a saved notebook shows without a kernel (``text/plain`` first)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.saved_views()["text/plain"]

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        if data is None:
            return bundle
        return {**data, **self.saved_views()}, meta

    def follow_display(self, handle: Any, *, delay: float = REPUBLISH_DELAY) -> None:
        """Re-publish ``handle``'s output whenever the session changes (streamed text aside), so a
        saved notebook holds the session as it is: within ``delay`` seconds while the agent is idle,
        and every :data:`RUNNING_REPUBLISH_DELAY` seconds while a turn runs (a re-published output
        is re-rendered, which would slow the live updates of a streaming turn), then at its end.
        The live view is re-rendered from the same model: what the user opened and where they
        scrolled are kept."""

        def refresh(_changes: list[Any]) -> None:
            try:
                self._sync_state()
                handle.update(self)
            except Exception as exc:  # never let a display problem reach the agent
                log.warning("nbagent widget snapshot refresh failed: %s", exc)

        soon: Coalescer[Any] = Coalescer(refresh, delay)
        later: Coalescer[Any] = Coalescer(refresh, max(delay, RUNNING_REPUBLISH_DELAY))

        def on_event(notice: LiveNotice) -> None:
            if notice.event is not None and notice.event.type != ASSISTANT_CHUNK:
                (later if self._agent.status == "running" else soon).push(notice.event)

        def on_status(notice: LiveNotice) -> None:
            if notice.status != "running":
                later.cancel()
                soon.push(notice)

        self._offs = (*self._offs, self._agent.on("event", on_event), self._agent.on("status", on_status))
        self._offs = (*self._offs, soon.cancel, later.cancel)

    def _sync_state(self) -> None:
        """Bring the synced traits up to date, so state saved with the notebook is current."""

    def close(self) -> None:
        """Stop following the agent and close the front-end model."""
        for off in self._offs:
            off()
        self._offs = ()
        super().close()


class TimelineWidget(_AgentWidget):
    """Turns, steps, every model-visible message with its source badge, streamed text and tools.

    The first render comes from the ``snapshot`` state; after it, only patches for new events are
    sent as custom messages, coalesced while text streams.
    """

    _esm = WidgetModule("timeline")
    snapshot = traitlets.Dict().tag(sync=True)

    def __init__(self, agent: Agent, *, delay: float = DELAY, **kwargs: Any) -> None:
        self._agent = agent
        self._timeline = Timeline()
        self._trees = AnswerTrees()  # answers as Markdown trees (the page builds them, parses no HTML)
        self._lock = threading.Lock()
        self._batch: Coalescer[Event] = Coalescer(self._flush, delay)
        self._offs = (agent.on("event", self._on_event), self._batch.cancel)
        self._timeline.feed(agent.events)
        self._sent = self._timeline.seq
        super().__init__(**kwargs)
        self._delay = delay
        self._whatifs: dict[str, WhatIf] = {}
        self.on_msg(self._on_msg)

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        """The synced state, with ``snapshot`` always taken fresh (a reloaded page gets it all)."""
        state = super().get_state(key=key, drop_defaults=drop_defaults)
        if "snapshot" in state and hasattr(self, "_timeline"):
            state["snapshot"] = self.current()
        return state

    def _sync_state(self) -> None:
        self.snapshot = dict(self.current())  # a traitlets Dict

    def current(self) -> TimelineSnapshot:
        """The view model now (pending events folded in first): ``{"seq", "nodes"}``."""
        self._batch.flush_now()
        with self._lock:
            self._sent = self._timeline.seq
            snapshot = self._timeline.snapshot()
            snapshot["nodes"] = [self._trees.node(n) for n in snapshot["nodes"]]
            return snapshot

    def saved_views(self) -> dict[str, Any]:
        self._batch.flush_now()
        with self._lock:
            bundle = self._timeline.to_json(max_text=SAVED_TEXT, max_turns=SAVED_TURNS)
        return {
            "text/plain": timeline_text(bundle),
            "text/html": timeline_html(bundle),
            TIMELINE_MIME: bundle,
        }

    def _on_event(self, notice: LiveNotice) -> None:
        if notice.event is not None:
            self._batch.push(notice.event)

    def _flush(self, events: list[Event]) -> None:
        with self._lock:
            start = self._sent
            ops = self._trees.patches(self._timeline.feed(events), self._timeline.nodes)
            self._sent = self._timeline.seq
        if ops:
            self.send({"type": "patch", "from": start, "to": self._sent, "ops": ops, "time": events[-1].time})

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and (
            whatif_message(self._agent, self._whatifs, content, self.send, self._delay)
            or handle_why(self._agent, content, self.send)
        ):
            return  # the "What if…" editor and "Which context mattered?" (nbagent/widgets/whatif.py)
        if not isinstance(content, dict) or content.get("type") not in ("hello", "resync"):
            return
        self._batch.flush_now()
        self.send({"type": "live"})
        if content.get("type") == "resync" or content.get("seq") != self._sent:
            self.send({"type": "reset", "snapshot": self.current()})


class InboxWidget(_AgentWidget):
    """Both pending queues, live; each item with its badge, label, first line, size, and a remove
    button that works while the kernel runs; an item opens to a preview of what will be sent."""

    _esm = WidgetModule("inbox")
    queues = traitlets.Dict().tag(sync=True)

    def __init__(self, agent: Agent, *, delay: float = DELAY, **kwargs: Any) -> None:
        self._agent = agent
        self._error: str | None = None
        self._batch: Coalescer[Any] = Coalescer(lambda _items: self._refresh(), delay)
        self._offs = (
            agent.on("event", self._on_event),
            agent.on("status", self._batch.push),
            self._batch.cancel,
        )
        super().__init__(queues=self._view(), **kwargs)
        self.on_msg(self._on_msg)

    def _view(self) -> InboxModel:
        inbox = self._agent.inbox
        view = inbox_model(
            [inbox_item(m, NEXT_STEP) for m in inbox.next_step],
            [inbox_item(m, NEXT_TURN) for m in inbox.next_turn],
            self._agent.status,
        )
        if self._error:
            view["error"] = self._error
        return view

    def _on_event(self, notice: LiveNotice) -> None:
        if notice.event is not None and notice.event.type == INBOX_SPLICED:
            self._batch.push(notice)

    def _refresh(self) -> None:
        self.queues = dict(self._view())

    def _sync_state(self) -> None:
        self._batch.flush_now()
        self._refresh()

    def saved_views(self) -> dict[str, Any]:
        self._batch.flush_now()
        view = self._view()
        # The lab extension paints this form without a kernel (no "model not found" after a reopen).
        saved = {
            **timeline_json(self._agent.events, max_turns=0),
            "view": "inbox",
            "status": view["status"],
            "status_text": view["status_text"],
            "summary": view["pending_text"],
        }
        return {"text/plain": inbox_text(view), "text/html": inbox_html(view), TIMELINE_MIME: saved}

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == "hello":
            self.send({"type": "live"})
            return
        if content.get("type") == "move":
            self._move(content)
            return
        if content.get("type") == "remove":
            message_id = str(content.get("id"))
            self._change("remove", message_id, lambda: self._agent.inbox.remove(message_id))

    def _move(self, content: dict[str, Any]) -> None:
        """A drag or a keyboard move in the view: ``agent.inbox.move`` (SPEC §11.1)."""
        message_id, queue, index = str(content.get("id")), content.get("queue"), content.get("index")
        if queue not in (NEXT_STEP, NEXT_TURN) or not isinstance(index, int) or index < 0:
            self._error = f"could not move: {queue!r} at {index!r} is not a place in the inbox"
            self._answer("moved", message_id)
            return
        self._change("move", message_id, lambda: self._agent.inbox.move(message_id, queue, index))

    def _change(self, verb: str, message_id: str, change: Callable[[], bool]) -> None:
        """Make one inbox change the view asked for; say in the widget why it did not happen."""
        self._error = None
        try:
            if not change():
                self._error = "that message is no longer pending (it was claimed or removed already)"
        except Exception as exc:  # a closed session, a failed write: say so in the widget
            log.warning("nbagent inbox %s failed: %s", verb, exc)
            self._error = f"could not {verb}: {exc}"
        self._answer(f"{verb}d", message_id)

    def _answer(self, reply: str, message_id: str) -> None:
        self._batch.flush_now()
        self._refresh()
        self.send({"type": reply, "id": message_id})
