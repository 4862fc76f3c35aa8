"""The loop's one port: everything ``loop.py`` and ``tool_batch.py`` ask of the turn driver.

The :class:`~nbagent.core.driver.Driver` implements it (the members that reach into its parts are
in ``driver_port.py``); the loop and the tool batch name only :class:`LoopPort`, so what they may
ask is this list and nothing else (``tests/test_loop_port.py`` walks their code to keep it so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from nbagent.core.driver_state import Approver, DriverConfig, OpenTurn
    from nbagent.core.estimate import Estimate
    from nbagent.core.journal import Build
    from nbagent.core.notices import NoticeName
    from nbagent.core.tools import Tool
    from nbagent.log.events import Record, RequestHeader
    from nbagent.log.messages import UserMessage
    from nbagent.models.base import Model, ModelRequest


class LoopPort(Protocol):
    """What the turn loop and the tool batch ask of the driver that runs them."""

    # -- the turn's lifecycle ----------------------------------------------------------------------

    @property
    def config(self) -> DriverConfig:
        """The fixed configuration (hooks, the agent's face, ``max_steps``, ``cancel_grace``, retries)."""
        ...

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
        """Commit what is staged (and ``change``) before an external effect."""
        ...

    def stage_chunk(self, turn: int, step: int, chunk: Mapping[str, Any]) -> None:
        """Stage one streamed ``assistant/chunk`` (batched, committed at most 100 ms later)."""
        ...

    def flush(self) -> None:
        """Commit everything staged before outside code (a hook, the model) sees the log."""
        ...

    @property
    def fault(self) -> BaseException | None:
        """The failed write that stopped the session, if one did (then nothing more is written)."""
        ...

    def fail(self, error: BaseException, turn: int | None) -> None:
        """The turn's end could not be recorded: stop the session (resume repairs it)."""
        ...

    def report_error(self, error: Any, turn: int | None) -> None:
        """Post an ``"error"`` notice."""
        ...

    # -- the request -------------------------------------------------------------------------------

    @property
    def model(self) -> Model:
        """The model the next request goes to."""
        ...

    def header_draft(self) -> RequestHeader | None:
        """A ``request/header`` when the model, system prompt or tools changed since the last one."""
        ...

    def estimate(self, entered: Sequence[UserMessage]) -> Estimate:
        """The next request measured as it will be sent: committed and staged history, then
        ``entered``, the system prompt and the tools, against the model's context window."""
        ...

    @property
    def context_limit(self) -> Literal["warn", "block"]:
        """``"block"``: a request over the context window is not sent."""
        ...

    def request(self, turn: int, step: int, attempt: int) -> ModelRequest:
        """The request to send now: the history, the offered tools' schemas and the system prompt."""
        ...

    # -- the tool batch ----------------------------------------------------------------------------

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The offered tools by name."""
        ...

    def tool_for(self, name: str) -> Tool | None:
        """The tool that answers a call of ``name`` (an offered one, or a stand-in)."""
        ...

    @property
    def approver(self) -> Approver | None:
        """Asked before a tool that requires approval runs (none: ``unavailable``)."""
        ...

    def wants(self, kind: NoticeName) -> bool:
        """A subscriber wants live notices of ``kind`` (e.g. ``"inbox/inserted"``)."""
        ...
