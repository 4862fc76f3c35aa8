"""The live turn display: a cell's own output, updated in place as its message's turn runs.

Event callbacks run synchronously on the kernel's loop thread; they only record and schedule a
render on the loop. Renders run in an empty ``contextvars.Context`` so ipykernel stamps the update
with the currently executing cell as parent: front ends route ``update_display_data`` by display id,
and headless runners (nbclient) only read messages of the cell they are running.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from nbagent.events import TURN_END, Event
from nbagent.messages import UserMessage
from nbagent.views import TurnView

if TYPE_CHECKING:
    from nbagent.agent import Agent, LiveNotice

RENDER_INTERVAL = 0.1
"""Seconds between two renders of a streaming turn."""


class Surface(Protocol):
    """Where a view is shown: a display handle in a kernel, a recorder in tests."""

    def show(self, data: dict[str, Any]) -> None: ...

    def update(self, data: dict[str, Any]) -> None: ...


class DisplaySurface:
    """An IPython display with its own display id, updated in place."""

    def __init__(self) -> None:
        self._handle: Any = None

    def show(self, data: dict[str, Any]) -> None:
        from IPython.display import display

        self._handle = display(data, raw=True, display_id=True)

    def update(self, data: dict[str, Any]) -> None:
        if self._handle is not None:
            self._handle.update(data, raw=True)


class LiveTurn:
    """Follows one delivered message: waiting in the inbox, then the turn that claims it, to its end."""

    def __init__(
        self,
        agent: Agent,
        message: UserMessage,
        verb: str,
        surface: Surface,
        *,
        on_final: Callable[[LiveTurn], None] | None = None,
    ) -> None:
        """``on_final`` is called once the final state has been shown from a cell."""
        self.agent = agent
        self.message = message
        self.verb = verb
        self.surface = surface
        self.turn: int | None = None
        self.view = TurnView(verb, message.plain_text, agent.inbox)
        self._events: list[Event] = []
        self._offs: list[Callable[[], None]] = []
        self._scheduled = False
        self._on_final = on_final
        self._discarded = False
        self.settled = False
        """Final and shown from a cell; until then a magic re-publishes it (see ``refresh``)."""
        self._loop = asyncio.get_running_loop()

    @property
    def final(self) -> bool:
        return self.view.final

    def start(self) -> None:
        """Show the initial output and subscribe; call before delivering the message."""
        self.surface.show(self.view.bundle())
        self._offs = [
            self.agent.on("event", self._on_event),
            self.agent.on("inbox/claimed", self._on_claimed),
            self.agent.on("inbox/discarded", self._on_discarded),
        ]

    def stop(self) -> None:
        for off in self._offs:
            off()
        self._offs = []

    def refresh(self) -> None:
        """Render now, in the caller's context: a magic calls it so the update is stamped with the
        running cell and reaches headless runners too; a final view so refreshed is settled."""
        self._render(in_cell=True)

    def _render(self, *, in_cell: bool) -> None:
        self._scheduled = False
        events, self._events = self._events, []
        self.view.feed(events)
        self.surface.update(self.view.bundle())
        if self.view.final:
            self.stop()
            if in_cell and not self.settled:
                self.settled = True
                if self._on_final is not None:
                    self._on_final(self)

    # -- notices (synchronous, on the loop thread) ------------------------------------------------

    def _on_event(self, notice: LiveNotice) -> None:
        event = notice.event
        if event is None:
            return
        self._events.append(event)  # from the message's insertion on: the view learns its queue
        if self.turn is None:
            return  # before the claim nothing of this message's turn has happened yet
        ends = event.type == TURN_END and event.data.get("turn") == self.turn
        self._schedule(0 if ends else RENDER_INTERVAL)

    def _on_claimed(self, notice: LiveNotice) -> None:
        if notice.message is not None and notice.message.id == self.message.id:
            self.turn = notice.turn
            self.view.claimed(notice.turn)
            self._schedule(0)

    def _on_discarded(self, notice: LiveNotice) -> None:
        if notice.message is not None and notice.message.id == self.message.id and self.turn is None:
            self._discarded = True
            self.view.discard()
            self._schedule(0)

    # -- rendering --------------------------------------------------------------------------------

    def _schedule(self, delay: float) -> None:
        if self._scheduled and delay > 0:
            return
        self._scheduled = True
        self._loop.call_later(delay, self._render_scheduled, context=contextvars.Context())

    def _render_scheduled(self) -> None:
        if self._scheduled and self._offs:
            self._render(in_cell=False)
