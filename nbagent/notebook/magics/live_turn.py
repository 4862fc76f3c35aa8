"""The live turn display: a cell's own output, updated in place as its message's turn runs.

Event callbacks run synchronously on the agent loop's thread; they only record and schedule a render
on that loop, so a turn's view keeps updating whatever the kernel's main thread does. A render sends
``update_display_data`` for the view's display id: front ends route it by that id to the cell that
showed the view. Renders run in an empty ``contextvars.Context``, so ipykernel (6 and 7) stamps them
with the request it is handling now: headless runners (nbclient), which read only the running cell's
messages, see them too and apply them by display id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

from nbagent.log.events import INBOX_SPLICED, TURN_END, TURN_START, Event, Splice, TurnEnd, parse_event
from nbagent.log.messages import UserMessage
from nbagent.views import Coalescer, TurnView

if TYPE_CHECKING:
    from nbagent.agent import Agent, LiveNotice
    from nbagent.views.schema import SessionRef

RENDER_INTERVAL = 0.1
"""Seconds between two renders of a streaming turn."""
LOOK_BACK = 200
"""Events searched, newest first, for the splice that recorded an action on a proposal."""


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
        waited: bool = False,
        session: SessionRef | None = None,
    ) -> None:
        """``on_final`` is called once the final state has been shown from a cell. ``waited``: the
        cell blocks until the run ends and then calls :meth:`refresh`, which shows the end; the loop
        then renders only the progress of a turn that outlasts ``RENDER_INTERVAL`` (a quick turn is
        shown once, at its end, instead of at its claim, at its end and again by the cell).
        ``session``: where the session lives (``KernelSession.session_ref``), put in every bundle."""
        self.agent = agent
        self.waited = waited
        self.message = message
        self.verb = verb
        self.surface = surface
        self.turn: int | None = None
        self.view = TurnView(verb, message.plain_text, agent.inbox)
        self.view.session = session
        if verb == "steer" and agent.status == "running":
            self._join_running_turn()
        self._offs: list[Callable[[], None]] = []
        self._on_final = on_final
        self.settled = False
        """Final and shown from a cell; until then a magic re-publishes it (see ``refresh``)."""
        # Notices arrive on the agent loop's thread, which schedules the renders; a magic's refresh
        # comes from the main thread. The coalescer hands batches over one at a time, in order.
        self._updates: Coalescer[Event | None] = Coalescer(self._publish, RENDER_INTERVAL, fresh_context=True)

    def _join_running_turn(self) -> None:
        """A message delivered while a turn runs (a steer) usually lands in that turn: fold the turn so
        far, so the view shows its title, start and steps, not a turn that began with this message."""
        events = self.agent.events
        starts = [i for i, e in enumerate(events) if e.type == TURN_START]
        if not starts or any(e.type == TURN_END for e in events[starts[-1] :]):
            return
        ends = [i for i, e in enumerate(events[: starts[-1]]) if e.type == TURN_END]
        pending = self.agent.inbox
        self.view.feed(events[ends[-1] + 1 if ends else 0 :])  # from the queuing of the turn's messages
        self.view.timeline.seed_pending(pending.next_step, pending.next_turn)  # the inbox as it is now

    @property
    def final(self) -> bool:
        return self.view.final

    def _proposed(self, field: Literal["code", "proposal"]) -> list[str]:
        """``field`` of each cell the turn proposed (``propose_cell``), in order."""
        if self.turn is None:
            return []
        return [n[field] for n in self.view.timeline.turn_nodes(self.turn) if n["type"] == "proposal"]

    def proposals(self) -> list[str]:
        """The code of each cell the turn proposed, in order."""
        return self._proposed("code")

    def proposal_ids(self) -> list[str]:
        """The id of each cell the turn proposed, in order."""
        return self._proposed("proposal")

    def show_told(self, message: UserMessage) -> None:
        """After the turn: the user acted on one of its proposals (``message``, recorded): fold the
        splice that recorded it and update the output, so the row (and the saved notebook) says so."""
        for event in reversed(self.agent.events[-LOOK_BACK:]):
            record = parse_event(event) if event.type == INBOX_SPLICED else None
            if isinstance(record, Splice) and any(m.id == message.id for m in record.inserted):
                self.view.feed([event])
                self.surface.update(self.view.bundle())
                return

    def start(self) -> None:
        """Show the initial output and subscribe; call before delivering the message."""
        self.surface.show(self.view.bundle())
        self._offs = [
            self.agent.on("event", self._on_event),
            self.agent.on("inbox/claimed", self._on_claimed),
            self.agent.on("inbox/discarded", self._on_discarded),
            self.agent.mcp.on_progress(self._on_progress),
        ]

    def stop(self) -> None:
        for off in self._offs:
            off()
        self._offs = []

    def refresh(self) -> None:
        """Render now, in the caller's context: a magic calls it so the update is stamped with the
        running cell and reaches headless runners too; a final view so refreshed is settled."""
        self._updates.flush_now(always=True)
        if self.view.final and not self.settled:
            self.settled = True
            if self._on_final is not None:
                self._on_final(self)

    def _publish(self, items: list[Event | None]) -> None:
        """Fold the new events (``None`` marks a claim or discard) and update the output."""
        self.view.feed([event for event in items if event is not None])
        self.surface.update(self.view.bundle())
        if self.view.final:
            self.stop()

    # -- notices (synchronous, on the loop thread) ------------------------------------------------

    def _on_event(self, notice: LiveNotice) -> None:
        event = notice.event
        if event is None:
            return
        if event.type == "tool/result":
            self.view.progress = None  # a call ended: its progress line goes
        if self.turn is None:  # from the message's insertion on the view learns its queue, unshown
            self._updates.push(event, hold=True)
            return
        record = parse_event(event) if event.type == TURN_END else None
        ends = isinstance(record, TurnEnd) and record.turn == self.turn
        self._updates.push(event, soon=ends and not self.waited)

    def _on_progress(self, tool: str, text: str) -> None:
        """A running MCP call's progress notification: shown in the headline until the turn ends."""
        if self.turn is not None and not self.view.final:
            self.view.progress = f"{tool}: {text}"
            self._updates.push(None, soon=True)

    def _on_claimed(self, notice: LiveNotice) -> None:
        if notice.message is not None and notice.message.id == self.message.id:
            assert notice.turn is not None  # an "inbox/claimed" notice always names the claiming turn
            self.turn = notice.turn
            self.view.claimed(notice.turn)
            self._updates.push(None, soon=not self.waited)

    def _on_discarded(self, notice: LiveNotice) -> None:
        if notice.message is not None and notice.message.id == self.message.id and self.turn is None:
            self.view.discard()
            self._updates.push(None, soon=True)
