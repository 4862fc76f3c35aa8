"""Running one answer's tool calls: model order, parallel-safe runs, cancellation (SPEC §5.4, §5.6)."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbagent._json import dumps, fix_text, storable
from nbagent.core.inbox import InboxState, plan_splice
from nbagent.core.journal import Plan
from nbagent.core.notices import LiveNotice
from nbagent.core.signal import CancelSignal, settle
from nbagent.core.tools import Tool, ToolArgumentsError, result_blocks
from nbagent.log.events import NEXT_STEP, ApprovalAsked, ApprovalDecided, ToolCallEvent, ToolResultEvent
from nbagent.log.messages import UserMessage, coerce_user_message, freeze_content, tool_result_message
from nbagent.log.vocabulary import ApprovalOutcome, ToolError, ToolErrorCode
from nbagent.models.base import ToolCallChunk

if TYPE_CHECKING:
    from nbagent.core.loop_port import LoopPort


@dataclass
class _Outcome:
    blocks: list[Any]
    is_error: bool = False
    error: ToolError | None = None
    contexts: tuple[UserMessage, ...] = ()
    concludes: bool = False


@dataclass
class _Call:
    """One started call: its chunk, and where its approval stands (for an abandoned call)."""

    chunk: ToolCallChunk
    asked: ApprovalAsked | None = None
    decided: bool = False
    task: asyncio.Task[_Outcome] | None = field(default=None, repr=False)


def _error(text: str, name: str, code: ToolErrorCode) -> _Outcome:
    return _Outcome([{"type": "text", "text": fix_text(text)}], True, {"name": fix_text(name), "code": code})


async def run_tool_batch(
    driver: LoopPort, turn: int, step: int, calls: Sequence[ToolCallChunk], signal: CancelSignal
) -> bool:
    """Run ``calls`` in the model's order; ``True`` if a result concluded the turn.

    Exclusive calls run alone; consecutive parallel-safe calls run together. Results are recorded
    in the model's order with their additional contexts queued right behind each result. After a
    cancel no call starts: each unstarted call gets an ``ABORTED_BEFORE_DISPATCH`` pair; a started
    call gets ``cancel_grace`` seconds to finish, then is abandoned with an ``ABORTED`` result.
    """
    concluded = False
    recorded: set[str] = set()
    started: list[_Call] = []
    i = 0
    try:
        while i < len(calls):
            if signal.cancelled:
                for unstarted in calls[i:]:
                    _record(
                        driver,
                        turn,
                        step,
                        unstarted,
                        _error(
                            "Error: tool call aborted before dispatch",
                            "AbortError",
                            "ABORTED_BEFORE_DISPATCH",
                        ),
                        with_call=True,
                    )
                    recorded.add(unstarted.id)
                break
            group = [calls[i]]
            if _parallel(driver, calls[i]):
                while i + len(group) < len(calls) and _parallel(driver, calls[i + len(group)]):
                    group.append(calls[i + len(group)])
            driver.commit([_call_event(turn, step, c) for c in group])
            started = [_Call(c) for c in group]
            loop = asyncio.get_running_loop()
            for call in started:
                call.task = loop.create_task(_run_one(driver, turn, step, call, signal))
            for call in started:
                assert call.task is not None
                if await settle(call.task, signal, driver.config.cancel_grace):
                    outcome = call.task.result()
                else:
                    outcome = _abandoned(driver, call, driver.config.cancel_grace)
                concluded = _record(driver, turn, step, call.chunk, outcome) or concluded
                recorded.add(call.chunk.id)
            i += len(group)
    except BaseException as exc:
        # The turn fails here (a write failed, or the driver itself is cancelled): every call of
        # the answer still gets exactly one result, so the log stays whole (SPEC §10 item 6).
        _close_unanswered(driver, turn, step, calls, started, recorded, exc)
        raise
    return concluded


def _close_unanswered(
    driver: LoopPort,
    turn: int,
    step: int,
    calls: Sequence[ToolCallChunk],
    started: list[_Call],
    recorded: set[str],
    exc: BaseException,
) -> None:
    running = {c.chunk.id: c for c in started}
    why = fix_text(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    for call in calls:
        if call.id in recorded:
            continue
        current = running.get(call.id)
        if current is None:
            outcome = _error(
                f"Error: this tool call did not start ({why}); it did not run and may be retried",
                "ToolNotStartedError",
                "TOOL_NOT_STARTED",
            )
        else:
            if current.asked is not None and not current.decided:
                driver.stage([_decided(current.asked, "cancelled")])
            task = current.task
            if task is not None and task.done() and not task.cancelled() and task.exception() is None:
                outcome = task.result()
            else:
                if task is not None and not task.done():
                    task.add_done_callback(_ignore)
                outcome = _error(
                    f"Error: the turn failed while this tool call ran ({why}), so its outcome is "
                    "unknown; retry it only if it is read-only or idempotent",
                    "ToolOutcomeUnknownError",
                    "TOOL_OUTCOME_UNKNOWN",
                )
        try:
            _record(driver, turn, step, call, outcome, with_call=current is None)
        except (TypeError, ValueError):  # an outcome the log cannot hold: say so instead
            _record(
                driver,
                turn,
                step,
                call,
                _error("Error: the tool's result could not be recorded", "InvalidResult", "INVALID_RESULT"),
                with_call=current is None,
            )


def _ignore(task: asyncio.Task[_Outcome]) -> None:
    if not task.cancelled():
        task.exception()


def _abandoned(driver: LoopPort, call: _Call, grace: float) -> _Outcome:
    """The result of a call still running ``grace`` seconds after the cancel (its approval closed)."""
    if call.asked is not None and not call.decided:
        driver.stage([_decided(call.asked, "cancelled")])
    return _error(
        f"Error: tool call aborted; it was still running {grace:g} s after the cancel, so it was "
        "abandoned and whatever it returns later is ignored",
        "AbortError",
        "ABORTED",
    )


def _parallel(driver: LoopPort, call: ToolCallChunk) -> bool:
    tool = driver.offer.tools.get(call.name)
    return tool is not None and tool.parallel_safe and not tool.requires_approval


def _call_event(turn: int, step: int, call: ToolCallChunk) -> ToolCallEvent:
    return ToolCallEvent(turn, step, call.id, call.name, call.arguments)


def _decided(asked: ApprovalAsked, answer: str) -> ApprovalDecided:
    """The record of an approver's ``answer``: ``allowed-session`` is stored as ``allowed-once`` with
    ``scope: "session"`` (SPEC §4's outcomes stay the four it names)."""
    if answer == "allowed-session":
        return ApprovalDecided(
            asked.id, asked.tool, asked.call_id, asked.arguments_sha256, "allowed-once", scope="session"
        )
    outcome: ApprovalOutcome = answer  # type: ignore[assignment]  # other answers are kept as given
    return ApprovalDecided(asked.id, asked.tool, asked.call_id, asked.arguments_sha256, outcome)


async def _run_one(driver: LoopPort, turn: int, step: int, started: _Call, signal: CancelSignal) -> _Outcome:
    call = started.chunk
    offer = driver.offer
    tool: Tool | None = offer.tool_for(call.name)
    if tool is None:
        known = ", ".join(sorted(offer.tools)) or "none"
        return _error(
            f"Error: there is no tool named {call.name!r} (tools: {known})", "ToolNotFound", "TOOL_NOT_FOUND"
        )
    try:
        arguments = tool.parse_arguments(call.arguments)
    except ToolArgumentsError as exc:
        return _error(f"Error: {exc}", "InvalidArguments", "INVALID_ARGUMENTS")
    if tool.requires_approval:
        decided = await _approve(driver, turn, step, tool, started, signal)
        if decided not in ("allowed-once", "allowed-session"):
            if decided == "cancelled" or signal.cancelled:
                return _error("Error: tool call aborted", "AbortError", "ABORTED")
            return _error(
                f"Error: the user did not approve this call ({decided})", "ApprovalDenied", "DENIED"
            )
    if signal.cancelled:
        return _error("Error: tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH")
    try:
        value = await tool.invoke(arguments, signal)
    except asyncio.CancelledError:
        if not signal.cancelled:
            raise
        return _error("Error: tool call aborted", "AbortError", "ABORTED")
    except Exception as exc:
        if signal.cancelled:
            return _error("Error: tool call aborted", "AbortError", "ABORTED")
        return _error(f"Error: {type(exc).__name__}: {exc}", type(exc).__name__, "TOOL_ERROR")
    try:
        blocks, is_error, result = result_blocks(value)
        contexts = tuple(coerce_user_message(m) for m in (result.additional_contexts if result else ()))
        blocks = list(freeze_content(storable(blocks)))
        for context in contexts:  # built by outside code: stored only if the log can hold it
            dumps(context.to_json())
    except (TypeError, ValueError) as exc:
        return _error(
            f"Error: the tool returned a result the log cannot store: {exc}",
            type(exc).__name__,
            "INVALID_RESULT",
        )
    outcome = _Outcome(blocks, is_error, None, contexts, bool(result and result.concludes_turn))
    if is_error and result is not None:
        outcome.error = {"name": "ToolError", "code": fix_text(result.code or "TOOL_ERROR")}
    if signal.cancelled:
        aborted = _error("Error: tool call aborted", "AbortError", "ABORTED")
        aborted.contexts = contexts
        return aborted
    return outcome


async def _approve(
    driver: LoopPort, turn: int, step: int, tool: Tool, started: _Call, signal: CancelSignal
) -> str:
    """Ask the agent's approver; exactly one ``approval/decided`` follows each ``approval/asked``."""
    call = started.chunk
    asked = ApprovalAsked(
        new_approval_id(), tool.name, call.id, arguments_digest(call.arguments), turn=turn, step=step
    )
    driver.commit([asked])
    started.asked = asked
    approver = driver.offer.approver
    outcome = "unavailable"
    if approver is not None:
        ask = asyncio.get_running_loop().create_task(approver(tool, call))
        remove = signal.on_cancel(ask.cancel)
        try:
            outcome = str(await ask)
        except asyncio.CancelledError:
            if not signal.cancelled:
                raise
            outcome = "cancelled"
        except Exception:
            outcome = "unavailable"
        finally:
            remove()
    if signal.cancelled:
        outcome = "cancelled"
    driver.commit([_decided(asked, fix_text(outcome))])
    started.decided = True
    return outcome


def new_approval_id() -> str:
    """A fresh id for one approval question: nbagent's own, never the model's call id (a model may
    reuse a call id, and a decision must not carry over to a later question)."""
    return f"approval-{secrets.token_hex(8)}"


def arguments_digest(arguments: Any) -> str:
    """The SHA-256 of a call's raw arguments as ``tool/call`` records them: what an approval approves."""
    return hashlib.sha256(str(arguments).encode("utf-8", "surrogatepass")).hexdigest()


def _record(
    driver: LoopPort, turn: int, step: int, call: ToolCallChunk, outcome: _Outcome, *, with_call: bool = False
) -> bool:
    """Stage a result (and its contexts' splice) as one change; ``True`` if it concludes the turn."""
    message = tool_result_message(call.id, outcome.blocks, is_error=outcome.is_error)
    result = ToolResultEvent(turn, step, message, outcome.error)
    contexts = outcome.contexts

    def build(state: InboxState) -> Plan:
        plan = Plan()
        if with_call:
            plan.drafts.append(_call_event(turn, step, call))
        plan.drafts.append(result)
        if contexts:
            sp = plan_splice(state, NEXT_STEP, len(state.next_step), 0, contexts)
            if sp is not None:
                plan.drafts.append(sp.event)
                plan.inbox = sp.after
                # (posted only to subscribers: the journal drops the notices nobody listens to)
                plan.notices.extend(("inbox/inserted", LiveNotice("inbox/inserted", m)) for m in sp.inserted)
        return plan

    driver.stage(build)  # committed with the next tool/call, request or turn/end
    return outcome.concludes and not outcome.is_error
