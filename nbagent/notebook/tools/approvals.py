"""The approval desk of a notebook session: who decides whether a tool that needs approval may run.

An :class:`Approvals` object is the agent's ``approver`` (SPEC §9.4). For each question it either
answers at once (the session policy allows the tool), or asks a person: the question is shown in the
cell whose turn asked it (see :mod:`nbagent.widgets.approval`), and the first decision wins, whether
it comes from a click there, ``%agent approve`` / ``%agent deny``, or code calling :meth:`decide`.
With nobody there to ask — no prompt seen by a front end and no ``%agent approve`` waiting — the
question gives up after ``timeout`` seconds as ``unavailable``. The core logs ``approval/asked``
before asking and exactly one ``approval/decided`` after; cancelling the turn makes it ``cancelled``.

Decisions may come from any thread (the kernel's main thread handles clicks and magics; the agent's
loop runs the turn); the desk is guarded by one lock and resolves questions on the agent's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from nbagent._json import storable
from nbagent.core.tool_batch import arguments_digest, new_approval_id
from nbagent.log.events import ApprovalAsked, parse_as

if TYPE_CHECKING:
    from nbagent.agent import Agent

Outcome = Literal["allowed-once", "allowed-session", "rejected", "cancelled", "unavailable"]
"""What the desk answers; ``allowed-session`` is an approval under an allowance for the rest of the
session (the log records it as ``allowed-once`` with ``scope: "session"``)."""
Policy = Literal["ask", "session"]

DEFAULT_TIMEOUT = 120.0
"""Seconds a question waits with nobody there to ask before it is ``unavailable``
(``NBAGENT_APPROVAL_TIMEOUT`` overrides it)."""

PRESENCE = 15.0
"""Seconds a front end's report that it shows a prompt counts as somebody being there; prompts report
every few seconds while they are on screen."""

_KEPT_SETTLED = 100


def default_timeout() -> float:
    """``NBAGENT_APPROVAL_TIMEOUT`` when it holds a positive number of seconds, else ``DEFAULT_TIMEOUT``."""
    raw = os.environ.get("NBAGENT_APPROVAL_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            f"NBAGENT_APPROVAL_TIMEOUT={raw!r} is not a number of seconds; set it to e.g. 120 or unset it"
        ) from None
    if not value > 0:
        raise ValueError(f"NBAGENT_APPROVAL_TIMEOUT={raw!r} must be more than 0 seconds")
    return value


@dataclass(frozen=True)
class Question:
    """One approval question, as the prompt shows it."""

    id: str
    """The id of its ``approval/asked`` event: made by nbagent for this question alone, never the
    model's call id, so a decision for it cannot carry over to a later call."""
    tool: str
    call_id: str
    arguments: str
    """The model's raw JSON arguments."""
    turn: int | None
    """The turn that asked (``None`` if it could not be read from the log)."""
    arguments_sha256: str = ""
    """The digest of ``arguments`` that its ``approval/asked`` records: what a decision approves."""

    @property
    def code(self) -> str | None:
        """The ``code`` argument (``run_code``), for display; ``None`` for other tools."""
        try:
            value = storable(json.loads(self.arguments)).get("code")
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Settled:
    """A question's end: its outcome, who decided, and a sentence for the prompt."""

    question: Question
    outcome: Outcome
    by: str
    """``click``, ``%agent approve``, ``policy``, ``timeout``, ``cancel``, ``code``…"""

    @property
    def sentence(self) -> str:
        what = {
            "allowed-once": "approved",
            "allowed-session": "approved",  # ``by`` says it was for the session
            "rejected": "denied",
            "cancelled": "cancelled with the turn",
            "unavailable": "not answered",
        }[self.outcome]
        return f"{self.question.tool} {what} ({self.by})"


@dataclass
class _Open:
    question: Question
    future: asyncio.Future[tuple[Outcome, str]]
    loop: asyncio.AbstractEventLoop
    asked_at: float
    seen_until: float = 0.0
    decision: tuple[Outcome, str] | None = None


@dataclass
class Waiter:
    """A ``%agent approve|deny`` waiting for the next question of the running turn; ``done`` gets the
    sentence saying what happened."""

    outcome: Outcome
    by: str
    done: concurrent.futures.Future[str] = field(default_factory=concurrent.futures.Future)
    question: Question | None = None
    """The question it decided (set before ``done``), so the cell can say exactly what that was."""
    early: bool = False
    """Whether the question was asked after the waiter was made (its code was never shown first)."""


class Approvals:
    """An agent's approver that asks the person in the notebook (see the module docstring).

    ``policy`` is ``"ask"`` (every call asks) or ``"session"`` (every tool that needs approval runs
    without asking, for this session); ``allowed_tools`` holds tools allowed for the session one by
    one (the prompt's "allow for this session"). ``listeners`` are called with a :class:`Question`
    when one opens and with a :class:`Settled` when it ends, on the agent's loop.
    """

    def __init__(self, agent: Agent | None = None, *, timeout: float | None = None) -> None:
        """``agent``: the agent whose ``approver`` this is, to tell which turn asked (optional)."""
        self.agent = agent
        self._asked_now: ApprovalAsked | None = None
        """The latest ``approval/asked`` from the agent's event notices, until a question takes it."""
        self._asked_taken: dict[str, None] = {}
        """Ids of ``approval/asked`` events a question took already (a late notice is not reused)."""
        if agent is not None:
            agent.on("event", self._on_event)
        self.policy: Policy = "ask"
        self.allowed_tools: set[str] = set()
        self.timeout = default_timeout() if timeout is None else timeout
        self.listeners: list[Callable[[Question | Settled], None]] = []
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}
        self._settled: dict[str, Settled] = {}
        self._waiters: list[Waiter] = []

    # -- the approver ------------------------------------------------------------------------------

    async def __call__(self, tool: Any, call: Any) -> Outcome:
        """Decide one call of ``tool`` (``agent.approver``): allowed by policy, or asked."""
        asked = self._asked_for(str(call.id))
        turn = asked.turn if asked is not None else None
        question = Question(
            id=str((asked.id if asked is not None else "") or new_approval_id()),
            tool=tool.name,
            call_id=call.id,
            arguments=str(call.arguments),
            turn=turn if isinstance(turn, int) else None,
            arguments_sha256=str(
                (asked.arguments_sha256 if asked is not None else None) or arguments_digest(call.arguments)
            ),
        )
        if self.policy == "session" or tool.name in self.allowed_tools:
            self._settle(question, "allowed-session", "allowed for this session")
            return "allowed-session"
        loop = asyncio.get_running_loop()
        entry = _Open(question, loop.create_future(), loop, time.monotonic())
        with self._lock:
            self._open[question.id] = entry
            waiter = self._waiters.pop(0) if self._waiters else None
            if waiter is not None:
                entry.decision = (waiter.outcome, waiter.by)
        if waiter is not None:
            entry.future.set_result((waiter.outcome, waiter.by))
            waiter.question, waiter.early = question, True
            waiter.done.set_result(self._said(question, waiter.outcome, waiter.by))
        else:
            self._tell(question)
        outcome: Outcome = "cancelled"
        by = "cancel"
        try:
            outcome, by = await self._wait(entry)
        finally:
            with self._lock:
                self._open.pop(question.id, None)
            self._settle(question, outcome, by)
        return outcome

    async def _wait(self, entry: _Open) -> tuple[Outcome, str]:
        while True:
            with self._lock:
                deadline = max(entry.asked_at, entry.seen_until) + self.timeout
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                with self._lock:
                    if entry.decision is None:
                        decision: tuple[Outcome, str] = (
                            "unavailable",
                            f"nobody there to ask for {self.timeout:g} s",
                        )
                        entry.decision = decision
                        return decision
                return await entry.future
            await asyncio.wait({entry.future}, timeout=remaining)
            if entry.future.done():
                return entry.future.result()

    # -- decisions ---------------------------------------------------------------------------------

    @property
    def pending(self) -> tuple[Question, ...]:
        """The questions waiting for a decision now (at most one per agent: such calls run alone)."""
        with self._lock:
            return tuple(e.question for e in self._open.values())

    def settled(self, approval_id: str) -> Settled | None:
        """How a recent question ended, if it did."""
        with self._lock:
            return self._settled.get(approval_id)

    def decide(
        self,
        outcome: Outcome,
        approval_id: str | None = None,
        *,
        by: str = "code",
        remember: bool = False,
        arguments_sha256: str | None = None,
    ) -> str:
        """Decide the pending question ``approval_id`` (the only one when ``None``); thread-safe.

        ``outcome`` is ``"allowed-once"`` or ``"rejected"``; ``remember`` also allows that tool for the
        rest of the session; ``arguments_sha256``, when given, must be the digest of the code the
        question asks about (a prompt passes what it showed). Returns a sentence saying what happened —
        a question that is no longer pending (its turn ended, or someone decided first), or one that
        asks about other code, is left as it was, and the sentence says so.
        """
        if outcome not in ("allowed-once", "rejected"):
            raise ValueError(f"a person decides 'allowed-once' or 'rejected', not {outcome!r}")
        with self._lock:
            entry = self._find(approval_id)
            if entry is None:
                return self._not_pending(approval_id)
            if arguments_sha256 is not None and arguments_sha256 != entry.question.arguments_sha256:
                return (
                    f"ignored: approval {entry.question.id} asks about other code than the decision "
                    "names; nothing changed"
                )
            if entry.decision is not None:
                return f"{entry.question.tool} was already decided ({entry.decision[1]}); nothing changed"
            remember = remember and outcome == "allowed-once"
            if remember:
                self.allowed_tools.add(entry.question.tool)
                by = f"{by}, and for the rest of the session"
                outcome = "allowed-session"
            entry.decision = (outcome, by)
            said = self._said(entry.question, outcome, by)
        entry.loop.call_soon_threadsafe(_resolve, entry.future, (outcome, by))
        return said

    def decide_next(self, outcome: Outcome, *, by: str) -> Waiter:
        """Decide the pending question, or else the next one asked (a ``%agent approve`` typed before
        the model asked). Wait on the returned waiter's ``done``; :meth:`forget` it if you stop waiting."""
        waiter = Waiter(outcome, by)
        with self._lock:
            if all(e.decision is not None for e in self._open.values()):
                self._waiters.append(waiter)
                return waiter
            entry = self._find(None)
        said = self.decide(outcome, entry.question.id if entry is not None else None, by=by)
        if entry is not None and entry.decision == (outcome, by):
            waiter.question = entry.question
        waiter.done.set_result(said)
        return waiter

    def forget(self, waiter: Waiter) -> None:
        """Withdraw a waiter of :meth:`decide_next` that no question took."""
        with self._lock:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def seen(self, approval_id: str) -> None:
        """A front end shows the question's prompt now: somebody is there to ask."""
        with self._lock:
            entry = self._open.get(approval_id)
            if entry is not None:
                entry.seen_until = time.monotonic() + PRESENCE

    # -- internals ---------------------------------------------------------------------------------

    def _asked_for(self, call_id: str) -> ApprovalAsked | None:
        """The ``approval/asked`` this question answers (its id, turn and digest): from the event
        notices, else (they may come later when another thread committed it) from the end of the log.
        ``None`` without an agent (a desk used on its own makes its own id)."""
        with self._lock:
            asked, self._asked_now = self._asked_now, None
        if asked is None or asked.call_id != call_id or asked.id in self._asked_taken:
            asked = None
            for event in reversed(self.agent.events if self.agent is not None else ()):
                record = parse_as(event, ApprovalAsked)
                if record is not None and record.call_id == call_id:
                    asked = record
                    break
        if asked is None:
            return None
        self._asked_taken[str(asked.id)] = None
        while len(self._asked_taken) > _KEPT_SETTLED:
            del self._asked_taken[next(iter(self._asked_taken))]
        return asked

    def _on_event(self, notice: Any) -> None:
        """Note each ``approval/asked`` (delivered on the agent loop before the ask)."""
        event = notice.event
        asked = parse_as(event, ApprovalAsked) if event is not None else None
        if asked is not None:
            with self._lock:
                self._asked_now = asked

    def _find(self, approval_id: str | None) -> _Open | None:
        if approval_id is not None:
            return self._open.get(approval_id)
        undecided = [e for e in self._open.values() if e.decision is None]
        return undecided[0] if undecided else next(iter(self._open.values()), None)

    def _not_pending(self, approval_id: str | None) -> str:
        if approval_id is None:
            return "no approval is pending"
        done = self._settled.get(approval_id)
        if done is None:
            return f"approval {approval_id} is not pending; nothing changed"
        when = f" in turn {done.question.turn}" if done.question.turn is not None else ""
        return f"ignored: that approval{when} is over ({done.sentence}); nothing changed"

    @staticmethod
    def _said(question: Question, outcome: Outcome, by: str) -> str:
        approved = outcome in ("allowed-once", "allowed-session")
        return f"{'approved' if approved else 'denied'} {question.tool} ({by})"

    def _settle(self, question: Question, outcome: Outcome, by: str) -> None:
        settled = Settled(question, outcome, by)
        with self._lock:
            self._settled[question.id] = settled
            while len(self._settled) > _KEPT_SETTLED:
                del self._settled[next(iter(self._settled))]
        self._tell(settled)

    def _tell(self, what: Question | Settled) -> None:
        for listener in list(self.listeners):
            try:
                listener(what)
            except Exception:  # a display problem never decides an approval
                import logging

                logging.getLogger("nbagent.approvals").warning("approval listener failed", exc_info=True)


def decided_call(question: Question, *, early: bool = False) -> str:
    """What a typed decision was for, as its cell says it: the approval, its turn, and the code (or
    the arguments) it decided, indented; ``early``: the model asked after the command was typed."""
    where = f" in turn {question.turn}" if question.turn is not None else ""
    when = ", which the model asked after this command ran" if early else ""
    shown = question.code if question.code is not None else question.arguments
    body = "\n".join(f"    {line}" for line in (shown.splitlines() or [""]))
    return f"approval {question.id}{where}{when}, for:\n{body}"


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)
