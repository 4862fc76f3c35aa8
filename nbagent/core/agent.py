"""The agent's core: deliveries, control, live notices. Its running state lives in ``driver.py`` and
the turn loop in ``loop.py``; :class:`nbagent.agent.Agent` adds what drives it from outside (forks,
replays, MCP servers)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

from nbagent.core.driver import Driver, in_driver
from nbagent.core.driver_state import DriverConfig, Resumed
from nbagent.core.hooks import Hooks
from nbagent.core.inbox import Inbox, InboxState
from nbagent.core.journal import Plan
from nbagent.core.loop import drive
from nbagent.core.notices import LiveNotice, NoticeName, Status
from nbagent.core.offer import Approver, Offer
from nbagent.core.ports import Releasable, SessionFile, WindowLookup
from nbagent.core.retry import RetryPolicy
from nbagent.core.runs import Run, fold_run
from nbagent.core.tools import Tool, as_tools
from nbagent.log.events import NEXT_STEP, NEXT_TURN, Event
from nbagent.log.messages import UserMessage
from nbagent.models.base import Model
from nbagent.models.registry import resolve_model

T = TypeVar("T")

__all__ = ["AgentCore", "LiveNotice", "in_driver"]


class AgentCore:
    """One live agent session: an append-only log, an inbox, and a driver that runs turns.

    Build one with :func:`nbagent.open_session` or :func:`nbagent.resume_session`.
    """

    def __init__(
        self,
        *,
        loop: asyncio.AbstractEventLoop,
        file: SessionFile | None,
        lease: Releasable | None,
        session_id: str,
        model: Model | str | None,
        tools: Iterable[Tool | Callable[..., Any]],
        system: str | None,
        max_steps: int,
        retry: RetryPolicy | None,
        cancel_grace: float = 10.0,
        resumed: Resumed | None = None,
        window_lookup: WindowLookup | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if not cancel_grace >= 0:
            raise ValueError("cancel_grace must be a number of seconds >= 0")
        self.session_id = session_id
        self.path: Path | str | None = file.path if file is not None else None
        self.hooks = Hooks(self)
        self._file = file
        self.on_close: list[Callable[[], Coroutine[Any, Any, None]]] = []
        """Awaited by :meth:`close` after the driver stopped, in order: what drives this agent from
        outside (its MCP servers) stops with it."""
        self.offer = Offer(resolve_model(model), as_tools(tools), system)
        """What the next request offers (model, tools, system prompt, approver, context limit): the
        agent's own, which its driver reads by reference. Change it through the agent's setters."""
        self._settings = DriverConfig(
            session_id=session_id,
            max_steps=max_steps,
            cancel_grace=float(cancel_grace),
            retry_policy=retry or RetryPolicy(),
            hooks=self.hooks,
            drive=drive,
            window_lookup=window_lookup,
        )
        self.driver = Driver(
            self._settings, loop=loop, file=file, lease=lease, offer=self.offer, resumed=resumed
        )
        """The turn driver: the running state and the seams the loop, the tools and the inbox use.
        Not a user API."""
        self.inbox: Inbox = Inbox(self.driver)
        self.repaired = False
        """``True`` when resuming appended crash-repair events (the log had ended inside a turn)."""
        if resumed is not None and resumed.repair:
            self.driver.submit(lambda _state: Plan(drafts=list(resumed.repair)))
            self.repaired = True
        self.driver.begin_session("resume" if resumed is not None else "open")

    # -- public surface ---------------------------------------------------------------------------

    @property
    def events(self) -> tuple[Event, ...]:
        """Every durable event committed so far."""
        return self.driver.events()

    @property
    def status(self) -> Status:
        """``"idle"``, ``"running"`` (spanning consecutive queued turns) or ``"closed"``."""
        return self.driver.life.status

    @property
    def closed(self) -> bool:
        return self.driver.life.closed

    @property
    def cancel_grace(self) -> float:
        """Seconds a cancelled turn waits for a started tool before abandoning it (SPEC §5.6)."""
        return self._settings.cancel_grace

    @property
    def max_steps(self) -> int:
        return self._settings.max_steps

    @property
    def retry_policy(self) -> RetryPolicy:
        return self._settings.retry_policy

    @property
    def model(self) -> Model:
        """The model of the next request (change it with :meth:`set_model`)."""
        return self.offer.model

    @property
    def tools(self) -> dict[str, Tool]:
        """The offered tools by name (add one with :meth:`add_tool`)."""
        return self.offer.tools

    @property
    def system(self) -> str | None:
        return self.offer.system

    @property
    def approver(self) -> Approver | None:
        """Asked before a tool that ``requires_approval`` runs: returns ``"allowed-once"``,
        ``"allowed-session"``, ``"rejected"`` or ``"unavailable"``. With none set, such calls are
        ``unavailable``."""
        return self.offer.approver

    @approver.setter
    def approver(self, approver: Approver | None) -> None:
        self.offer.approver = approver

    @property
    def context_limit(self) -> str:
        """``"warn"`` (the default): a request estimated above 90 % of the model's context window
        carries a warning; ``"block"``: the pre-step rejects it and the turn ends ``blocked``."""
        return self.offer.context_limit

    @context_limit.setter
    def context_limit(self, value: str) -> None:
        if value not in ("warn", "block"):
            raise ValueError(f"context_limit must be 'warn' or 'block', got {value!r}")
        self.offer.context_limit = value  # type: ignore[assignment]

    def followup(self, message: UserMessage | str) -> UserMessage:
        """Queue ``message`` as its own turn (``next-turn``, FIFO) and wake the driver."""
        return self.driver.deliver(message, NEXT_TURN, wake=True)

    def steer(self, message: UserMessage | str) -> UserMessage:
        """Queue ``message`` for the running turn's next step (a new turn when idle) and wake."""
        return self.driver.deliver(message, NEXT_STEP, wake=True)

    def inject(self, message: UserMessage | str) -> UserMessage:
        """Queue context for the nearest later boundary without starting the model."""
        return self.driver.deliver(message, NEXT_STEP, wake=False)

    def wake(self, *, prelude: Callable[[InboxState, int], Plan] | None = None) -> bool:
        """Start a turn when idle and either queue holds something; return whether one started.

        No message is added: a resumed session's parked followup runs (``%agent run``). Call it on
        the agent's loop thread. ``prelude(inbox, turn)`` plans drafts (inbox splices, a record)
        written in the turn's first commit just before its ``turn/start`` (a replay's edit, §11.2).
        """
        driver = self.driver
        driver.check_can_mutate()
        if not driver.on_loop_thread():
            raise RuntimeError("wake() runs on the agent's loop thread (loop.call_soon_threadsafe)")
        driver.projections.materialise()  # a resumed log is read before a turn opens (SPEC §6.3)
        if driver.life.driving or driver.life.stopping or not driver.journal.staged_inbox.pending:
            return False
        driver.prelude = prelude  # taken by the turn's first commit (open_turn)
        try:
            driver.start()
        except BaseException:
            driver.prelude = None
            raise
        return driver.life.driving

    def cancel(self, cause: str = "user", *, keep_inbox: bool = False) -> None:
        """Abort the running turn (cooperatively) and, unless ``keep_inbox``, cancel pending work.

        From any thread; one thread's calls take effect in that thread's order.
        """
        self.driver.cancel(cause, keep_inbox=keep_inbox)

    async def when_idle(self) -> None:
        """Resolve once the driver has stopped and nothing waking is latched (status ``idle``).

        Awaitable from any loop: from another running loop (a notebook cell's ``await``, while the
        agent lives on the notebook's agent loop) the wait runs on the agent's loop.
        """
        await self._on_own_loop(self.driver.when_idle())

    async def run(self, message: UserMessage | str, *, steer: bool = False) -> Run:
        """Deliver ``message`` (a followup, or steering), wait until idle, return the owned run."""
        return await self._on_own_loop(self._run(message, steer=steer))

    async def _run(self, message: UserMessage | str, *, steer: bool) -> Run:
        start = self.driver.committed
        self.steer(message) if steer else self.followup(message)
        await self.driver.when_idle()
        return fold_run(self.driver.projections.since(start))

    async def close(self) -> None:
        """Abort a running turn (cause ``"closed"``), wait for it, keep the inbox, release the lease."""
        await self._on_own_loop(self._close())

    async def _close(self) -> None:
        await self.driver.close()
        for stop in self.on_close:
            await stop()

    async def _on_own_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` here, or on the agent's loop when the caller runs on another live loop."""
        loop = self.driver.loop
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop or not loop.is_running():
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    def on(self, name: NoticeName, callback: Callable[[LiveNotice], Any]) -> Callable[[], None]:
        """Subscribe to a live notice; returns a function that unsubscribes."""
        return self.driver.notices.on(name, callback)

    def add_tool(self, tool: Tool | Callable[..., Any]) -> Tool:
        """Offer another tool from the next request on (a ``request/header`` records the change)."""
        (added,) = as_tools([tool]).values()
        if added.name in self.tools:
            raise ValueError(f"a tool named {added.name!r} is already offered")
        self.tools[added.name] = added
        self.offer.tools_changed()
        return added

    def remove_tool(self, name: str) -> Tool | None:
        """Stop offering tool ``name`` from the next request on; the removed tool, or ``None``."""
        removed = self.tools.pop(name, None)
        self.offer.tools_changed()
        return removed

    def tool_for(self, name: str) -> Tool | None:
        """The tool a call named ``name`` runs: an offered one, else an MCP server's stand-in that
        answers why that server offers no such tool now (SPEC §9.7)."""
        return self.offer.tool_for(name)

    @property
    def tool_schemas(self) -> tuple[Any, ...]:
        """The JSON schemas of the offered tools, as requests carry them (cached until a change)."""
        return self.offer.tool_schemas

    def set_model(self, model: Model | str) -> None:
        """Use ``model`` for later requests (a ``request/header`` records the change)."""
        self.offer.model = resolve_model(model)
        if self._file is not None and not self.driver.life.closed:
            self._file.update_session(self.session_id, model=self.model.name)

    def __repr__(self) -> str:
        return (
            f"<Agent {self.session_id} {self.status} model={self.model.name!r} "
            f"events={len(self.driver.projections)}>"
        )
