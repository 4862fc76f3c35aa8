"""The loop's one port: everything ``loop.py`` and ``tool_batch.py`` ask of the turn driver.

The :class:`~nbagent.core.driver.Driver` implements :class:`LoopPort` (the members that reach into
its parts are in ``driver_port.py``); the loop and the tool batch name only these two protocols, so
what they may ask is this list and nothing else (``tests/test_loop_port.py`` walks their code to
keep it so, and checks that they only read the :class:`~nbagent.core.offer.Offer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nbagent.core.driver_state import DriverConfig, OpenTurn
    from nbagent.core.estimate import Estimate
    from nbagent.core.journal import Build
    from nbagent.core.offer import Offer
    from nbagent.log.events import Record, RequestHeader
    from nbagent.log.messages import UserMessage
    from nbagent.log.vocabulary import Failure
    from nbagent.models.base import ModelRequest


class LoopPort(Protocol):
    """What the turn loop and the tool batch ask of the driver that runs them."""

    # -- what the driver is given ------------------------------------------------------------------

    @property
    def config(self) -> DriverConfig:
        """The fixed settings: the agent's hooks, ``max_steps``, ``cancel_grace``, retries."""
        ...

    @property
    def offer(self) -> Offer:
        """What the next request offers: the model, the tools (``tool_for``), the approver and the
        context limit. Read only: the agent changes it."""
        ...

    # -- turns and claims --------------------------------------------------------------------------

    def next_turn(self) -> OpenTurn | None:
        """Open the next queued turn; ``None`` when stopping, nothing is pending, or none opened."""
        ...

    def converged(self) -> None:
        """The driver task ends: go idle (or replay a latched wake)."""
        ...

    def claim(self, turn: int) -> tuple[UserMessage, ...]:
        """Claim all of ``next-step`` durably at a step boundary (``()`` when it is empty)."""
        ...

    @property
    def next_step_pending(self) -> bool:
        """Messages wait in the staged ``next-step`` queue (a steer: the turn takes another step)."""
        ...

    # -- writing -----------------------------------------------------------------------------------

    def stage(self, change: Build | list[Record]) -> None:
        """Stage events: committed with the next external effect."""
        ...

    def commit(self, change: Build | list[Record] | None = None) -> Any:
        """Commit what is staged (and ``change``) before an external effect (a request, a tool, a
        hook); with nothing staged and no ``change``, nothing is written."""
        ...

    def stage_chunk(self, turn: int, step: int, chunk: Mapping[str, Any]) -> None:
        """Stage one streamed ``assistant/chunk`` (batched, committed at most 100 ms later)."""
        ...

    # -- errors ------------------------------------------------------------------------------------

    def report(self, error: Failure | BaseException, turn: int | None, *, fatal: bool = False) -> None:
        """Post an ``"error"`` notice; ``fatal``: the turn's end could not be recorded, so the
        session stops (nothing more is written; resume repairs it)."""
        ...

    @property
    def fault(self) -> BaseException | None:
        """The failed write that stopped the session, if one did (then nothing more is written)."""
        ...

    # -- the request -------------------------------------------------------------------------------

    def request(self, turn: int, step: int) -> StepRequest:
        """Step ``step``'s request, made as the offer and the log stand when it is asked for."""
        ...


class StepRequest(Protocol):
    """One step's request: measured before the step, headed when the step starts and on each retry,
    and its body read only when it is sent (after the commit that precedes it)."""

    @property
    def turn(self) -> int: ...

    @property
    def step(self) -> int: ...

    def estimate(self, entered: Sequence[UserMessage]) -> Estimate:
        """The request measured as it will be sent: committed and staged history, then
        ``entered``, the system prompt and the tools, against the model's context window."""
        ...

    def header(self) -> RequestHeader | None:
        """A ``request/header`` when the model, system prompt or tools changed since the last one."""
        ...

    def body(self, attempt: int) -> ModelRequest:
        """What is sent now: the history, the offered tools' schemas and the system prompt."""
        ...
