"""The turn loop: claim → pre-step → model → tools, one turn after another (SPEC §5)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from nbagent.errors import SessionWriteError
from nbagent.events import (
    ASSISTANT_MESSAGE,
    LLM_RETRY,
    REQUEST_HEADER,
    STEP_END,
    STEP_START,
    TURN_END,
    USER_MESSAGE,
)
from nbagent.hooks import Enter, Reject, RequestFailure, Retry, TurnStopping, waterfall
from nbagent.hooks import PreStep as PreStepPayload
from nbagent.messages import AssistantMessage, UserMessage, assistant_message, coerce_user_message
from nbagent.models.base import (
    Finish,
    ModelError,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
    chunk_to_json,
    model_provider,
)
from nbagent.signal import CancelSignal
from nbagent.tool_batch import run_tool_batch

if TYPE_CHECKING:
    from nbagent.agent import Agent, OpenTurn


class Aborted(Exception):
    """The turn's signal was cancelled (raised at a check point)."""


class TurnFailed(Exception):
    """The turn ends ``error`` with this failure."""

    def __init__(self, failure: dict[str, Any]) -> None:
        super().__init__(failure.get("message"))
        self.failure = failure


def check(signal: CancelSignal) -> None:
    if signal.cancelled:
        raise Aborted


def describe(exc: BaseException) -> str:
    """The exception and its causes, one after another."""
    parts = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(f"{type(cur).__name__}: {cur}" if str(cur) else type(cur).__name__)
        cur = cur.__cause__ or cur.__context__
    return " <- ".join(parts)


async def drive(agent: Agent, turn: OpenTurn | None) -> None:
    """The driver task: run turns while there is pending work and each turn ends normally."""
    try:
        while turn is not None:
            proceed = await run_turn(agent, turn)
            if not proceed or agent._closing or agent._fault is not None:
                break
            if not agent._journal.staged_inbox.pending:
                break
            agent._signal = CancelSignal(agent._loop)
            turn = agent._open_turn()
    finally:
        agent._driver_finished()


async def run_turn(agent: Agent, turn: OpenTurn) -> bool:
    """Run one opened turn to its ``turn/end``; ``True`` if the driver may open the next one."""
    signal, number = turn.signal, turn.number
    step = 0
    owes_step = False
    max_tokens = False
    claimed = turn.claimed
    first = True
    reason: dict[str, Any] | None = None
    proceed = False
    try:
        while True:
            if not first:
                check(signal)
                claimed = agent._claim(number)
            first = False
            check(signal)
            decision = await _pre_step(agent, claimed, number, step + 1, signal)
            check(signal)
            if isinstance(decision, Reject):
                reason = {"kind": "blocked"}
                break
            messages = _entered(decision)
            if not messages and not owes_step:
                reason = {"kind": "max-tokens" if max_tokens else "completed"}
                proceed = step > 0
                break
            if step >= agent.max_steps:
                raise TurnFailed(
                    {"message": f"the turn reached max_steps={agent.max_steps}", "code": "STEP_LIMIT"}
                )
            step += 1
            result = await run_step(agent, number, step, messages, signal)
            max_tokens = max_tokens or result == "max-tokens"
            owes_step = result == "continue"
            check(signal)
            if not owes_step and not agent._journal.staged_inbox.next_step:
                if agent.hooks.turn_stopping.listeners:
                    agent._flush()
                for listener in agent.hooks.turn_stopping.listeners:
                    await listener(TurnStopping(agent, number, signal))
                    check(signal)
                if not agent._journal.staged_inbox.next_step:
                    reason = {"kind": "max-tokens" if max_tokens else "completed"}
                    proceed = True
                    break
    except BaseException as exc:
        proceed = False
        reason = _failure_reason(agent, exc, signal, number)
        if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit) and not isinstance(
            exc, Aborted
        ):
            _end_turn(agent, number, signal, reason)
            raise
    _end_turn(agent, number, signal, reason)
    return proceed


def _failure_reason(
    agent: Agent, exc: BaseException, signal: CancelSignal, number: int
) -> dict[str, Any] | None:
    if isinstance(exc, SessionWriteError) or agent._fault is not None:
        agent._fault = agent._fault or exc
        agent._report_error(exc, number)
        return None
    if isinstance(exc, asyncio.CancelledError) and not signal.cancelled:
        signal.cancel("closed")
    if signal.cancelled:
        return {"kind": "aborted", "reason": {"kind": signal.cause}}
    failure = exc.failure if isinstance(exc, TurnFailed) else {"message": describe(exc), "code": "UNKNOWN"}
    agent._report_error(failure, number)
    return {"kind": "error", "error": failure}


def _end_turn(agent: Agent, number: int, signal: CancelSignal, reason: dict[str, Any] | None) -> None:
    signal.sealed = True
    if reason is None or agent._fault is not None:
        return
    try:
        agent._write([(TURN_END, {"turn": number, "reason": reason}, None)])
    except SessionWriteError as exc:
        agent._fault = exc
        agent._report_error(exc, number)


async def _pre_step(
    agent: Agent, claimed: tuple[UserMessage, ...], turn: int, step: int, signal: CancelSignal
) -> Any:
    listeners = agent.hooks.pre_step.listeners
    if not listeners:
        return Enter(claimed)
    agent._flush()  # the claim is durable before outside code sees it

    async def default() -> Enter:
        return Enter(claimed)

    return await waterfall(listeners, PreStepPayload(agent, claimed, turn, step, signal), default)


def _entered(decision: Any) -> tuple[UserMessage, ...]:
    if not isinstance(decision, Enter):
        raise TypeError(
            f"a pre_step listener returned {decision!r}; return nbagent.Enter(...) or nbagent.Reject()"
        )
    messages = tuple(coerce_user_message(m) for m in decision.messages)
    ids = [m.id for m in messages]
    if len(ids) != len(set(ids)):
        raise ValueError("a pre_step decision holds the same message id twice")
    return messages


def _header(agent: Agent) -> tuple[str, dict[str, Any]] | None:
    """The ``request/header`` draft when the header is new or changed since the last one."""
    tools = list(agent.tool_schemas)
    header: dict[str, Any] = {"model": agent.model.name}
    if agent.system is not None:
        header["system"] = agent.system
    if tools:
        header["tools"] = tools
    last = agent._last_header
    reason = agent._header_reason
    if last is not None and reason == "change" and {k: v for k, v in last.items() if k != "reason"} == header:
        return None
    agent._last_header = header
    agent._header_reason = "change"
    return REQUEST_HEADER, {**header, "reason": reason}


async def run_step(
    agent: Agent, turn: int, step: int, messages: tuple[UserMessage, ...], signal: CancelSignal
) -> str:
    """One step: ``step/start``, its messages, the request (with retries), the tools, ``step/end``.

    Returns ``"completed"``, ``"max-tokens"`` or ``"continue"`` (tool results await the model).
    """
    drafts: list[Any] = [(STEP_START, {"turn": turn, "step": step}, None)]
    drafts += [(USER_MESSAGE, m.to_json(), m) for m in messages]
    header = _header(agent)
    if header is not None:
        drafts.append((*header, None))
    agent._write(drafts, flush=False)
    try:
        attempt = 1
        while True:
            check(signal)
            if attempt > 1 and (header := _header(agent)) is not None:
                agent._write([(*header, None)], flush=False)
            answer = await _request(agent, turn, step, attempt, signal)
            if answer.failure is None:
                break
            decision = await _request_error(agent, turn, step, attempt, answer.failure, signal)
            check(signal)
            if isinstance(decision, Retry):
                attempt += 1
                continue
            raise TurnFailed(answer.failure)
        calls = answer.calls if answer.finish != "max-tokens" else []
        message = answer.message(agent, with_calls=bool(calls))
        data: dict[str, Any] = {"turn": turn, "step": step, "message": message.to_json()}
        if answer.usage is not None:
            data["usage"] = answer.usage
        agent._write([(ASSISTANT_MESSAGE, data, message)], flush=False)
        if answer.finish == "max-tokens":
            return "max-tokens"
        if not calls:
            return "completed"
        concluded = await run_tool_batch(agent, turn, step, calls, signal)
        return "completed" if concluded else "continue"
    finally:
        if agent._fault is None:
            agent._write([(STEP_END, {"turn": turn, "step": step}, None)], flush=False)


class _Answer:
    """What one request attempt produced, assembled from its chunks."""

    __slots__ = ("calls", "failure", "finish", "reasoning", "text", "usage")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCallChunk] = []
        self.usage: dict[str, int] | None = None
        self.finish: str | None = None
        self.failure: dict[str, Any] | None = None

    def feed(self, chunk: Any) -> None:
        if isinstance(chunk, TextDelta):
            self.text.append(chunk.text)
        elif isinstance(chunk, ReasoningDelta):
            self.reasoning.append(chunk.text)
        elif isinstance(chunk, ToolCallChunk):
            self.calls.append(chunk)
        elif isinstance(chunk, Usage):
            self.usage = {"input_tokens": chunk.input_tokens, "output_tokens": chunk.output_tokens}
        elif isinstance(chunk, Finish):
            self.finish = chunk.kind
            if chunk.kind == "error":
                f = chunk.failure
                self.failure = (
                    f.to_json() if f is not None else {"message": "request failed", "code": "UNKNOWN"}
                )

    @property
    def visible(self) -> bool:
        return bool("".join(self.text) or "".join(self.reasoning))

    def message(self, agent: Agent, *, with_calls: bool) -> AssistantMessage:
        content: list[dict[str, Any]] = []
        if self.reasoning:
            content.append({"type": "reasoning", "text": "".join(self.reasoning)})
        if self.text:
            content.append({"type": "text", "text": "".join(self.text)})
        if with_calls:
            content += [
                {"type": "tool-call", "id": c.id, "name": c.name, "arguments": c.arguments}
                for c in self.calls
            ]
        model = agent.model
        return assistant_message(
            content, provider=model_provider(model), model=getattr(model, "model", None) or model.name
        )


async def _request(agent: Agent, turn: int, step: int, attempt: int, signal: CancelSignal) -> _Answer:
    """Send one request and stream its answer; on cancel, keep the visible prefix and abort."""
    agent._flush()  # everything model-visible is durable before the request is sent
    request = ModelRequest(
        messages=agent._history.snapshot(),
        tools=agent.tool_schemas,
        system=agent.system,
        turn=turn,
        step=step,
        attempt=attempt,
        log_length=agent._journal.committed,
    )
    answer = _Answer()
    consumer = asyncio.get_running_loop().create_task(_consume(agent, request, signal, answer))
    remove = signal.on_cancel(consumer.cancel)
    try:
        await consumer
    except asyncio.CancelledError:
        if not (signal.cancelled and consumer.cancelled()):
            raise
    finally:
        remove()
    if signal.cancelled:
        if answer.visible and answer.failure is None:
            prefix = _Answer()
            prefix.text, prefix.reasoning, prefix.usage = answer.text, answer.reasoning, answer.usage
            message = prefix.message(agent, with_calls=False)
            data: dict[str, Any] = {
                "turn": turn,
                "step": step,
                "message": message.to_json(),
                "interrupted": True,
            }
            if answer.usage is not None:
                data["usage"] = answer.usage
            agent._write([(ASSISTANT_MESSAGE, data, message)], flush=False)
        raise Aborted
    return answer


async def _consume(agent: Agent, request: ModelRequest, signal: CancelSignal, answer: _Answer) -> None:
    """Stream the model's chunks into the log (batched) and into ``answer``."""
    turn, step = request.turn, request.step
    stream = agent.model.stream(request, signal)
    try:
        async for chunk in stream:
            if signal.cancelled:
                return
            agent._stage_chunk({"turn": turn, "step": step, "chunk": chunk_to_json(chunk)})
            answer.feed(chunk)
            if answer.finish is not None:
                return
        if not signal.cancelled:
            answer.failure = {
                "message": "the model's stream ended without a Finish chunk",
                "code": "TRANSPORT",
            }
    except asyncio.CancelledError:
        raise
    except ModelError as exc:
        if not signal.cancelled:
            answer.failure = exc.failure.to_json()
    except Exception as exc:
        if not signal.cancelled:
            answer.failure = {"message": describe(exc), "code": getattr(exc, "code", None) or "UNKNOWN"}
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


async def _request_error(
    agent: Agent, turn: int, step: int, attempt: int, failure: dict[str, Any], signal: CancelSignal
) -> Any:
    payload = RequestFailure(agent, turn, step, attempt, failure, signal)
    if agent.hooks.request_error.listeners:
        agent._flush()

    async def default() -> Retry | None:
        policy = agent.retry_policy
        if not policy.should_retry(failure.get("code", "UNKNOWN"), attempt):
            return None
        delay = policy.delay_ms(attempt, failure.get("retry_after_ms"))
        agent._write(
            [
                (
                    LLM_RETRY,
                    {
                        "turn": turn,
                        "step": step,
                        "attempt": attempt + 1,
                        "delay_ms": delay,
                        "failure": failure,
                    },
                    None,
                )
            ]
        )
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(signal.wait(), delay / 1000)
        return None if signal.cancelled else Retry()

    return await waterfall(agent.hooks.request_error.listeners, payload, default)
