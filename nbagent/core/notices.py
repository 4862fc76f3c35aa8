"""Live notices (SPEC §3.5): not durable, delivered on the agent's loop thread in commit order."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from nbagent.log.events import Event
from nbagent.log.messages import UserMessage
from nbagent.log.vocabulary import Failure

log = logging.getLogger("nbagent")

NoticeName = Literal["status", "error", "event", "inbox/inserted", "inbox/discarded", "inbox/claimed"]
"""The live notices an agent posts (SPEC §3.5)."""

Status = Literal["idle", "running", "closed"]
"""``agent.status``: ``running`` spans consecutive queued turns."""

Notice = tuple[NoticeName, Any]


@dataclass(frozen=True, slots=True)
class LiveNotice:
    """What a live-notice callback receives; the attributes that matter depend on ``name``."""

    name: NoticeName
    message: UserMessage | None = None
    turn: int | None = None
    status: Status | None = None
    error: Failure | BaseException | None = None
    """``error``: the :class:`Failure` a turn ended with, or the exception that stopped the session."""
    event: Event | None = None


class Notices:
    """Subscriptions and the queue of notices waiting to be delivered on the loop thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, loop_thread: int) -> None:
        self._loop = loop
        self._loop_thread = loop_thread
        self.subs: dict[str, list[Callable[[LiveNotice], Any]]] = {}
        self._queue: deque[Notice] = deque()
        self._tls = threading.local()
        self.after_event_round: Callable[[], None] | None = None
        """Called after each round of ``"event"`` callbacks (runs a cancel's deferred clearing)."""
        self.on_change: Callable[[], None] | None = None
        """Called when the set of subscribed names changes."""

    def wants(self, name: NoticeName) -> bool:
        return name in self.subs

    def on(self, name: NoticeName, callback: Callable[[LiveNotice], Any]) -> Callable[[], None]:
        self.subs.setdefault(name, []).append(callback)
        if self.on_change is not None:
            self.on_change()

        def off() -> None:
            subs = self.subs.get(name, [])
            if callback in subs:
                subs.remove(callback)
                if not subs:
                    self.subs.pop(name, None)
            if self.on_change is not None:
                self.on_change()

        return off

    @property
    def in_event(self) -> bool:
        """Whether this thread is inside an ``"event"`` callback."""
        return getattr(self._tls, "in_event", False)

    def on_loop_thread(self) -> bool:
        return threading.get_ident() == self._loop_thread

    def enqueue(self, notices: list[Notice]) -> None:
        """Queue notices (called by the journal in commit order, under its lock: never calls out)."""
        subs = self.subs
        if subs:
            self._queue.extend(n for n in notices if n[0] in subs)

    def post(self, name: NoticeName, notice: LiveNotice) -> None:
        """Queue one notice if anyone listens, and deliver it now when on the loop thread."""
        if name in self.subs:
            self._queue.append((name, notice))
            self.kick()

    def kick(self) -> None:
        """Deliver queued notices: now on the loop thread, else soon on it."""
        if not self._queue:
            return
        if self.on_loop_thread():
            self.drain()
        else:
            try:
                self._loop.call_soon_threadsafe(self.drain)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                self._queue.clear()

    def drain(self) -> None:
        queue = self._queue
        while queue:
            name, payload = queue.popleft()
            if name == "event":
                self._dispatch("event", LiveNotice("event", event=payload))
            else:
                self._dispatch(name, payload)

    def _dispatch(self, name: str, notice: LiveNotice) -> None:
        is_event = name == "event"
        for callback in list(self.subs.get(name, ())):
            if is_event:
                self._tls.in_event = True
            try:
                callback(notice)
            except Exception:
                log.exception("nbagent %r callback %r failed", name, callback)
            finally:
                if is_event:
                    self._tls.in_event = False
        if is_event and self.after_event_round is not None:
            self.after_event_round()
