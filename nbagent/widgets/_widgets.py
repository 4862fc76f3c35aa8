"""The live widgets: anywidget models fed by the agent's live notices, coalesced on its loop."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from nbagent.agent import Agent, LiveNotice
from nbagent.events import INBOX_SPLICED, Event
from nbagent.widgets._batch import Coalescer
from nbagent.widgets.queues import inbox_view
from nbagent.widgets.snapshot import inbox_html, timeline_html
from nbagent.widgets.timeline import Timeline

log = logging.getLogger("nbagent.widgets")
_HERE = Path(__file__).parent
DELAY = 0.04
"""Seconds a burst of events (a streaming answer) is coalesced into one front-end message."""


class _AgentWidget(anywidget.AnyWidget):
    _css = _HERE / "widgets.css"
    uid = traitlets.Unicode().tag(sync=True)
    """Identifies the model across views, so a re-published output keeps what the user opened."""

    @traitlets.default("uid")
    def _uid(self) -> str:
        return uuid.uuid4().hex

    def _with_html(self, bundle: Any, html: str) -> Any:
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        if data is None:
            return bundle
        return {**data, "text/html": html}, meta

    def follow_display(self, handle: Any, *, delay: float = 0.25) -> None:
        """Re-publish ``handle``'s output when the agent turns idle, refreshing its static snapshot.

        A saved notebook then holds the session as of its last idle moment, not as of the
        ``show()`` call. The live view is rebuilt from the same model (its open items are kept).
        """
        pending: list[asyncio.TimerHandle] = []

        def refresh() -> None:
            pending.clear()
            try:
                self._sync_state()
                handle.update(self)
            except Exception as exc:  # never let a display problem reach the agent
                log.warning("nbagent widget snapshot refresh failed: %s", exc)

        def on_status(notice: LiveNotice) -> None:
            if notice.status not in ("idle", "closed") or pending:
                return
            try:
                pending.append(asyncio.get_running_loop().call_later(delay, refresh))
            except RuntimeError:
                refresh()

        self._offs = (*self._offs, self._agent.on("status", on_status))

    def _sync_state(self) -> None:
        """Bring the synced traits up to date, so state saved with the notebook is current."""

    def close(self) -> None:
        """Stop following the agent and close the front-end model."""
        for off in getattr(self, "_offs", ()):
            off()
        self._offs = ()
        batch = getattr(self, "_batch", None)
        if batch is not None:
            batch.cancel()
        super().close()


class TimelineWidget(_AgentWidget):
    """Turns, steps, every model-visible message with its source badge, streamed text and tools.

    The first render comes from the ``snapshot`` state; after it, only patches for new events are
    sent as custom messages, coalesced while text streams.
    """

    _esm = _HERE / "timeline.js"
    snapshot = traitlets.Dict().tag(sync=True)

    def __init__(self, agent: Agent, *, delay: float = DELAY, **kwargs: Any) -> None:
        self._agent = agent
        self._timeline = Timeline()
        self._sent = 0
        self._batch: Coalescer[Event] = Coalescer(self._flush, delay)
        self._offs = (agent.on("event", self._on_event),)
        self._timeline.feed(agent.events)
        self._sent = self._timeline.seq
        super().__init__(**kwargs)
        self.on_msg(self._on_msg)

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        """The synced state, with ``snapshot`` always taken fresh (a reloaded page gets it all)."""
        state = super().get_state(key=key, drop_defaults=drop_defaults)
        if "snapshot" in state and hasattr(self, "_timeline"):
            state["snapshot"] = self.current()
        return state

    def _sync_state(self) -> None:
        self.snapshot = self.current()

    def current(self) -> dict[str, Any]:
        """The view model now (pending events folded in first)."""
        self._batch.flush_now()
        self._sent = self._timeline.seq
        return self._timeline.snapshot()

    def _on_event(self, notice: LiveNotice) -> None:
        if notice.event is not None:
            self._batch.push(notice.event)

    def _flush(self, events: list[Event]) -> None:
        ops = self._timeline.feed(events)
        if not ops:
            return
        msg = {
            "type": "patch",
            "from": self._sent,
            "to": self._timeline.seq,
            "ops": ops,
            "time": events[-1].time,
        }
        self._sent = self._timeline.seq
        self.send(msg)

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") not in ("hello", "resync"):
            return
        self._batch.flush_now()
        if content.get("type") == "resync" or content.get("seq") != self._sent:
            self.send({"type": "reset", "snapshot": self.current()})

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self._with_html(super()._repr_mimebundle_(**kwargs), timeline_html(self.current()))


class InboxWidget(_AgentWidget):
    """Both pending queues, live; each item with its source badge, label, first line, size, remove."""

    _esm = _HERE / "inbox.js"
    queues = traitlets.Dict().tag(sync=True)

    def __init__(self, agent: Agent, *, delay: float = DELAY, **kwargs: Any) -> None:
        self._agent = agent
        self._batch: Coalescer[Any] = Coalescer(lambda _items: self._refresh(), delay)
        self._offs = (agent.on("event", self._on_event), agent.on("status", self._batch.push))
        super().__init__(queues=self._view(), **kwargs)
        self.on_msg(self._on_msg)

    def _view(self, error: str | None = None) -> dict[str, Any]:
        inbox = self._agent.inbox
        view = inbox_view(inbox.next_step, inbox.next_turn, self._agent.status)
        if error:
            view["error"] = error
        return view

    def _on_event(self, notice: LiveNotice) -> None:
        if notice.event is not None and notice.event.type == INBOX_SPLICED:
            self._batch.push(notice)

    def _refresh(self, error: str | None = None) -> None:
        self.queues = self._view(error)

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "remove":
            return
        error = None
        try:
            if not self._agent.inbox.remove(str(content.get("id"))):
                error = "that message is no longer pending (it was claimed or removed already)"
        except Exception as exc:  # a closed session, a failed write: say so in the widget
            log.warning("nbagent inbox remove failed: %s", exc)
            error = f"could not remove: {exc}"
        self._batch.flush_now()
        self._refresh(error)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        self._batch.flush_now()
        return self._with_html(super()._repr_mimebundle_(**kwargs), inbox_html(self.queues))
