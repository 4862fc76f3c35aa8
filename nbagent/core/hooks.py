"""Extension points: the ``pre_step`` and ``request_error`` waterfalls and the serial hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from nbagent.core.inbox import Inbox
from nbagent.core.signal import CancelSignal
from nbagent.log.events import Event
from nbagent.log.messages import UserMessage
from nbagent.log.vocabulary import Failure

L = TypeVar("L")


class AgentFace(Protocol):
    """The agent as listeners see it (``step.agent``): :class:`nbagent.Agent` is the one
    implementation. Declared here so the hooks, the driver and the loop need not import it."""

    @property
    def session_id(self) -> str: ...

    @property
    def inbox(self) -> Inbox: ...

    @property
    def events(self) -> tuple[Event, ...]: ...

    @property
    def status(self) -> str: ...

    def followup(self, message: UserMessage | str) -> UserMessage: ...

    def steer(self, message: UserMessage | str) -> UserMessage: ...

    def inject(self, message: UserMessage | str) -> UserMessage: ...

    def cancel(self, cause: str = "user", *, keep_inbox: bool = False) -> None: ...


class Hook(Generic[L]):
    """An ordered list of async listeners; the first registered is the outermost."""

    __slots__ = ("_listeners", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._listeners: tuple[L, ...] = ()

    def add(self, listener: L, *, prepend: bool = False) -> Callable[[], None]:
        """Register ``listener`` (outermost with ``prepend=True``); returns a function removing it."""
        if not callable(listener):
            raise TypeError(f"{self.name} listener must be an async function, got {listener!r}")
        self._listeners = (listener, *self._listeners) if prepend else (*self._listeners, listener)

        def remove() -> None:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

        return remove

    @property
    def listeners(self) -> tuple[L, ...]:
        return self._listeners

    def __len__(self) -> int:
        return len(self._listeners)


@dataclass(frozen=True, slots=True)
class Enter:
    """Enter a step with ``messages`` (the complete batch for the request being finalized)."""

    messages: tuple[UserMessage, ...] = ()

    def __init__(self, messages: Iterable[UserMessage] = ()) -> None:
        object.__setattr__(self, "messages", tuple(messages))


@dataclass(frozen=True, slots=True)
class Reject:
    """Reject the step: the turn closes ``blocked`` and its claimed batch is dropped."""


@dataclass(frozen=True, slots=True)
class Retry:
    """Make a new request attempt in the same step."""


Decision = Enter | Reject


@dataclass(frozen=True, slots=True)
class PreStep:
    agent: AgentFace
    messages: tuple[UserMessage, ...]
    turn: int
    step: int
    signal: CancelSignal


@dataclass(frozen=True, slots=True)
class RequestFailure:
    agent: AgentFace
    turn: int
    step: int
    attempt: int
    failure: Failure
    signal: CancelSignal


@dataclass(frozen=True, slots=True)
class TurnStopping:
    agent: AgentFace
    turn: int
    signal: CancelSignal


@dataclass(frozen=True, slots=True)
class SessionStart:
    agent: AgentFace
    source: Literal["open", "resume"]


Next = Callable[[], Awaitable[Any]]
PreStepListener = Callable[[PreStep, Next], Awaitable[Decision]]
RequestErrorListener = Callable[[RequestFailure, Next], Awaitable["Retry | None"]]
TurnStoppingListener = Callable[[TurnStopping], Awaitable[None]]
SessionStartListener = Callable[[SessionStart], Awaitable[None]]


class Hooks:
    """``agent.hooks``: ``pre_step``, ``request_error``, ``turn_stopping``, ``session_start``."""

    def __init__(self, agent: AgentFace) -> None:
        self.agent = agent
        """The agent whose hooks these are: what every payload carries as ``agent`` (and what
        ``in_driver`` holds while its turn runs). The driver reaches the agent only here."""
        self.pre_step: Hook[PreStepListener] = Hook("pre_step")
        self.request_error: Hook[RequestErrorListener] = Hook("request_error")
        self.turn_stopping: Hook[TurnStoppingListener] = Hook("turn_stopping")
        self.session_start: Hook[SessionStartListener] = Hook("session_start")


async def waterfall(listeners: tuple[Any, ...], payload: Any, default: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``listeners`` outermost first; each may ``await next()`` for the downstream answer."""

    async def call(i: int) -> Any:
        if i == len(listeners):
            return await default()
        return await listeners[i](payload, lambda: call(i + 1))

    return await call(0)
