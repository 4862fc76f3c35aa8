"""``%agent show`` before any session: the widgets of the session the first delivery will open.

A read-only command creates nothing (no session, no file), yet the user who runs ``%agent show`` first
expects to watch what comes. :class:`AgentSlot` stands in for the agent the widgets follow: empty and
idle until the kernel session opens or resumes one, then that agent, whose events so far are handed to
the widgets' subscriptions (on the agent loop) before its later notices, so they fill in live.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbagent.agent import Agent, LiveNotice
    from nbagent.core.notices import NoticeName
    from nbagent.log.events import Event
    from nbagent.log.messages import UserMessage


class _EmptyInbox:
    next_step: tuple[UserMessage, ...] = ()
    next_turn: tuple[UserMessage, ...] = ()
    has_pending = False

    def remove(self, message_id: str) -> bool:
        return False


class AgentSlot:
    """The agent-shaped view the widgets read (``events``, ``inbox``, ``status``, ``on``)."""

    def __init__(self) -> None:
        self.agent: Agent | None = None
        self._lock = threading.Lock()
        self._subs: list[tuple[NoticeName, Callable[[LiveNotice], Any], list[Callable[[], None]]]] = []

    @property
    def events(self) -> tuple[Event, ...]:
        return self.agent.events if self.agent is not None else ()

    @property
    def inbox(self) -> Any:
        return self.agent.inbox if self.agent is not None else _EmptyInbox()

    @property
    def status(self) -> str:
        return self.agent.status if self.agent is not None else "idle"

    def on(self, name: NoticeName, callback: Callable[[LiveNotice], Any]) -> Callable[[], None]:
        """Subscribe now (to the agent, once there is one); returns the unsubscribe function."""
        with self._lock:
            if self.agent is not None:
                return self.agent.on(name, callback)
            entry: tuple[NoticeName, Callable[[LiveNotice], Any], list[Callable[[], None]]] = (
                name,
                callback,
                [],
            )
            self._subs.append(entry)

        def off() -> None:
            with self._lock:
                if entry in self._subs:
                    self._subs.remove(entry)
            for real_off in entry[2]:
                real_off()

        return off

    def attach(self, agent: Agent) -> None:
        """Follow ``agent`` from now on: subscribe, then replay its events and status (call on the
        agent loop's thread, where its notices are delivered, so none comes between)."""
        from nbagent.core.agent import LiveNotice

        with self._lock:
            if self.agent is not None:
                return
            self.agent = agent
            subs = list(self._subs)
            self._subs.clear()
        for name, callback, offs in subs:
            offs.append(agent.on(name, callback))
            if name == "event":
                for event in agent.events:
                    callback(LiveNotice("event", event=event))
            elif name == "status":
                callback(LiveNotice("status", status=agent.status))
