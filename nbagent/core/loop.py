"""The turn loop: claim → pre-step → model → tools, one turn after another (SPEC §5)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from nbagent._json import FrozenDict, fix_text, storable
from nbagent.core.estimate import encoding_ready
from nbagent.core.hooks import Enter, Reject, RequestFailure, Retry, TurnStopping, waterfall
from nbagent.core.hooks import PreStep as PreStepPayload
from nbagent.core.signal import CancelSignal, settle
from nbagent.errors import SessionWriteError
from nbagent.log.events import (
    AssistantMessageEvent,
    LlmRetry,
    Record,
    RequestEstimate,
    StepEnd,
    StepStart,
    TurnEnd,
    UserMessageEvent,
)
from nbagent.log.messages import AssistantMessage, Block, UserMessage, assistant_message, coerce_user_message
from nbagent.log.vocabulary import Failure, LoopFailureCode, TokenUsage
from nbagent.models.base import (
    Finish,
    Model,
    ModelError,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
    chunk_to_json,
    model_provider,
)
from nbagent.redaction import scrub

if TYPE_CHECKING:
    from nbagent.core.driver_state import OpenTurn
    from nbagent.core.loop_port import LoopPort, StepRequest


class Aborted(Exception):
    """The turn's signal was cancelled (raised at a check point)."""


StepOutcome = Literal["completed", "max-tokens", "continue"]
"""How a step ended: ``continue`` means tool results await the model."""


class TurnFailed(Exception):
    """The turn ends ``error`` with this failure."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def _failure(message: str, code: LoopFailureCode) -> Failure:
    return Failure(message, code)


def check(signal: CancelSignal) -> None:
    if signal.cancelled:
        raise Aborted


def describe(exc: BaseException) -> str:
    """The exception and its causes, one after another (secrets such as API keys scrubbed)."""
    parts = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(f"{type(cur).__name__}: {cur}" if str(cur) else type(cur).__name__)
        cur = cur.__cause__ or cur.__context__
    return fix_text(scrub(" <- ".join(parts)))


async def drive(driver: LoopPort, turn: OpenTurn | None) -> None:
    """The driver task: run turns while there is pending work and each turn ends normally."""
    try:
        while turn is not None:
            proceed = await run_turn(driver, turn)
            if not proceed:
                break
            turn = driver.next_turn()  # None when stopping or nothing is pending
    finally:
        driver.converged()


async def run_turn(driver: LoopPort, turn: OpenTurn) -> bool:
    """Run one opened turn to its ``turn/end``; ``True`` if the driver may open the next one."""
    config = driver.config
    hooks = config.hooks
    signal, number = turn.signal, turn.number
    step = 0
    owes_step = False
    max_tokens = False
    claimed = turn.claimed
    first = True
    end: TurnEnd | None = None
    proceed = False
    try:
        while True:
            if not first:
                check(signal)
                if step >= config.max_steps:  # checked before the claim: nothing is claimed for it
                    raise TurnFailed(_failure(f"the turn reached max_steps={config.max_steps}", "STEP_LIMIT"))
                claimed = driver.claim(number)
            first = False
            check(signal)
            decision = await _pre_step(driver, claimed, number, step + 1, signal)
            check(signal)
            if isinstance(decision, Reject):
                end = TurnEnd(number, "blocked")
                break
            messages = _entered(decision)
            if not messages and not owes_step:
                end = TurnEnd(number, "max-tokens" if max_tokens else "completed")
                proceed = step > 0
                break
            await encoding_ready(driver.offer.model)  # tiktoken's load, off this thread (started at open)
            request = driver.request(number, step + 1)
            estimate = request_estimate(request, messages)
            if estimate.warning is not None and driver.offer.context_limit == "block":
                end = TurnEnd(number, "blocked")  # the claimed batch is gone, as for a Reject
                driver.stage([estimate])
                break
            step += 1
            result = await run_step(driver, request, messages, signal, estimate)
            max_tokens = max_tokens or result == "max-tokens"
            owes_step = result == "continue"
            check(signal)
            if not owes_step and not driver.next_step_pending:
                if hooks.turn_stopping.listeners:
                    driver.commit()
                for listener in hooks.turn_stopping.listeners:
                    await listener(TurnStopping(hooks.agent, number, signal))
                    check(signal)
                if not driver.next_step_pending:
                    end = TurnEnd(number, "max-tokens" if max_tokens else "completed")
                    proceed = True
                    break
    except BaseException as exc:
        proceed = False
        end = _failed_end(driver, exc, signal, number)
        if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit) and not isinstance(
            exc, Aborted
        ):
            _end_turn(driver, signal, end)
            raise
    return _end_turn(driver, signal, end) and proceed


def _failed_end(driver: LoopPort, exc: BaseException, signal: CancelSignal, number: int) -> TurnEnd | None:
    if driver.fault is not None:
        return None
    if isinstance(exc, asyncio.CancelledError) and not signal.cancelled:
        signal.cancel("closed")
    if signal.cancelled:
        return TurnEnd(number, "aborted", cause=signal.cause)
    failure = exc.failure if isinstance(exc, TurnFailed) else _failure(describe(exc), "UNKNOWN")
    driver.report(failure, number)
    return TurnEnd(number, "error", error=failure.storable())


def _end_turn(driver: LoopPort, signal: CancelSignal, end: TurnEnd | None) -> bool:
    """Commit ``turn/end`` (with everything the turn staged); ``False`` if that failed."""
    signal.seal()
    if end is None or driver.fault is not None:
        return False
    try:
        driver.commit([end])
    except (SessionWriteError, ValueError) as exc:
        driver.report(exc, end.turn, fatal=True)
        return False
    return True


async def _pre_step(
    driver: LoopPort, claimed: tuple[UserMessage, ...], turn: int, step: int, signal: CancelSignal
) -> Any:
    hooks = driver.config.hooks
    listeners = hooks.pre_step.listeners
    if not listeners:
        return Enter(claimed)
    driver.commit()  # the claim is durable before outside code sees it

    async def default() -> Enter:
        return Enter(claimed)

    return await waterfall(listeners, PreStepPayload(hooks.agent, claimed, turn, step, signal), default)


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


async def run_step(
    driver: LoopPort,
    request: StepRequest,
    messages: tuple[UserMessage, ...],
    signal: CancelSignal,
    estimate: RequestEstimate,
) -> StepOutcome:
    """One step: ``step/start``, its messages, the request (with retries), the tools, ``step/end``.

    ``estimate`` (the request measured before it is sent) commits with the entered messages."""
    turn, step = request.turn, request.step
    drafts: list[Record] = [StepStart(turn, step)]
    drafts += [UserMessageEvent(m) for m in messages]
    header = request.header()
    if header is not None:
        drafts.append(header)
    drafts.append(estimate)
    driver.stage(drafts)
    try:
        attempt = 1
        while True:
            check(signal)
            if attempt > 1 and (header := request.header()) is not None:
                driver.stage([header])
            answer = await _request(driver, request, attempt, signal)
            if answer.failure is None:
                break
            decision = await _request_error(driver, turn, step, attempt, answer.failure, signal)
            check(signal)
            if isinstance(decision, Retry):
                attempt += 1
                continue
            raise TurnFailed(answer.failure)
        calls = answer.calls if answer.finish != "max-tokens" else []
        message = answer.message(driver.offer.model, with_calls=bool(calls))
        driver.stage([AssistantMessageEvent(turn, step, message, answer.usage)])
        if answer.finish == "max-tokens":
            return "max-tokens"
        if not calls:
            return "completed"
        from nbagent.core.tool_batch import run_tool_batch  # (not imported until a tool is called)

        concluded = await run_tool_batch(driver, turn, step, calls, signal)
        return "completed" if concluded else "continue"
    finally:
        if driver.fault is None:
            driver.stage([StepEnd(turn, step)])


class _Answer:
    """What one request attempt produced, assembled from its chunks."""

    __slots__ = ("calls", "failure", "finish", "reasoning", "text", "usage")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCallChunk] = []
        self.usage: TokenUsage | None = None
        self.finish: str | None = None
        self.failure: Failure | None = None

    def feed(self, chunk: Any, stored: dict[str, Any]) -> None:
        """Take ``chunk``, whose storable JSON form is ``stored`` (text made valid Unicode)."""
        if isinstance(chunk, TextDelta):
            self.text.append(stored["text"])
        elif isinstance(chunk, ReasoningDelta):
            self.reasoning.append(stored["text"])
        elif isinstance(chunk, ToolCallChunk):
            self.calls.append(ToolCallChunk(stored["id"], stored["name"], stored["arguments"]))
        elif isinstance(chunk, Usage):
            self.usage = chunk.to_json()  # type: ignore[assignment]
        elif isinstance(chunk, Finish):
            self.finish = chunk.kind
            if chunk.kind == "error":
                failure = stored.get("failure")  # the chunk's failure, as storable as the chunk
                self.failure = (
                    Failure.from_json(failure)
                    if failure is not None
                    else _failure("request failed", "UNKNOWN")
                )

    @property
    def visible(self) -> bool:
        return bool("".join(self.text) or "".join(self.reasoning))

    def message(self, model: Model, *, with_calls: bool) -> AssistantMessage:
        content: list[Block] = []
        if self.reasoning:
            content.append({"type": "reasoning", "text": "".join(self.reasoning)})
        if self.text:
            content.append({"type": "text", "text": "".join(self.text)})
        if with_calls:
            content += [
                {"type": "tool-call", "id": c.id, "name": c.name, "arguments": c.arguments}
                for c in self.calls
            ]
        return assistant_message(
            content,
            provider=fix_text(model_provider(model)),
            model=fix_text(getattr(model, "model", None) or model.name),
        )


async def _request(driver: LoopPort, request: StepRequest, attempt: int, signal: CancelSignal) -> _Answer:
    """Send one request and stream its answer; on cancel, keep the visible prefix and abort."""
    driver.commit()  # everything model-visible is durable before the request is sent
    body = request.body(attempt)
    answer = _Answer()
    consumer = asyncio.get_running_loop().create_task(_consume(driver, body, signal, answer))
    remove = signal.on_cancel(consumer.cancel)
    try:
        if await settle(consumer, signal, driver.config.cancel_grace):
            consumer.result()
    except asyncio.CancelledError:
        if not (signal.cancelled and consumer.cancelled()):
            raise
    finally:
        remove()
    if signal.cancelled:
        if answer.visible and answer.failure is None:
            prefix = _Answer()
            prefix.text, prefix.reasoning, prefix.usage = answer.text, answer.reasoning, answer.usage
            message = prefix.message(driver.offer.model, with_calls=False)
            event = AssistantMessageEvent(request.turn, request.step, message, answer.usage, interrupted=True)
            driver.stage([event])
        raise Aborted
    return answer


async def _consume(driver: LoopPort, body: ModelRequest, signal: CancelSignal, answer: _Answer) -> None:
    """Stream the model's chunks into the log (batched) and into ``answer``."""
    turn, step = body.turn, body.step
    stream = driver.offer.model.stream(body, signal)
    try:
        async for chunk in stream:
            if signal.cancelled:
                return
            stored = chunk_to_json(chunk)
            if type(chunk) is TextDelta or type(chunk) is ReasoningDelta:
                stored["text"] = fix_text(stored["text"])  # a lone surrogate becomes U+FFFD
            else:
                stored = storable(stored)
            driver.stage_chunk(turn, step, stored)
            answer.feed(chunk, stored)
            if answer.finish is not None:
                return
        if not signal.cancelled:
            answer.failure = _failure("the model's stream ended without a Finish chunk", "TRANSPORT")
    except asyncio.CancelledError:
        raise
    except ModelError as exc:
        if not signal.cancelled:
            answer.failure = exc.failure.storable()
    except SessionWriteError:
        raise
    except Exception as exc:
        if not signal.cancelled:
            answer.failure = Failure(describe(exc), getattr(exc, "code", None) or "UNKNOWN")
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


async def _request_error(
    driver: LoopPort, turn: int, step: int, attempt: int, failure: Failure, signal: CancelSignal
) -> Any:
    config = driver.config
    payload = RequestFailure(config.hooks.agent, turn, step, attempt, failure, signal)
    listeners = config.hooks.request_error.listeners
    if listeners:
        driver.commit()

    async def default() -> Retry | None:
        policy = config.retry_policy
        if not policy.should_retry(failure.code, attempt):
            return None
        delay = policy.delay_ms(attempt, failure.retry_after_ms)
        driver.commit([LlmRetry(turn, step, attempt + 1, delay, failure)])
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(signal.wait(), delay / 1000)
        return None if signal.cancelled else Retry()

    return await waterfall(listeners, payload, default)


def request_estimate(request: StepRequest, entered: Sequence[UserMessage]) -> RequestEstimate:
    """The ``request/estimate`` of the step's request: the history as it will be at dispatch
    (committed, staged, then ``entered``), the system prompt and the tools."""
    est = request.estimate(entered)
    warning = FrozenDict(est.warning) if est.warning is not None else None
    return RequestEstimate(
        request.turn, request.step, est.total, FrozenDict(est.by_source), est.counter, est.window, warning
    )
