"""Running one answer's tool calls: model order, parallel-safe runs, cancellation (SPEC §5.4, §5.6)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbagent.events import APPROVAL_ASKED, APPROVAL_DECIDED, INBOX_SPLICED, NEXT_STEP, TOOL_CALL, TOOL_RESULT
from nbagent.inbox import InboxState, plan_splice
from nbagent.journal import Plan
from nbagent.messages import UserMessage, coerce_user_message, freeze_content, tool_result_message
from nbagent.models.base import ToolCallChunk
from nbagent.signal import CancelSignal
from nbagent.tools import Tool, ToolArgumentsError, result_blocks

if TYPE_CHECKING:
    from nbagent.agent import Agent


@dataclass
class _Outcome:
    blocks: list[Any]
    is_error: bool = False
    error: dict[str, str] | None = None
    contexts: tuple[UserMessage, ...] = ()
    concludes: bool = False
    approval: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _error(text: str, name: str, code: str) -> _Outcome:
    return _Outcome([{"type": "text", "text": text}], True, {"name": name, "code": code})


async def run_tool_batch(
    agent: Agent, turn: int, step: int, calls: Sequence[ToolCallChunk], signal: CancelSignal
) -> bool:
    """Run ``calls`` in the model's order; ``True`` if a result concluded the turn.

    Exclusive calls run alone; consecutive parallel-safe calls run together. Results are committed
    in the model's order with their additional contexts queued right behind each result. After a
    cancel no call starts: each unstarted call gets an ``ABORTED_BEFORE_DISPATCH`` pair.
    """
    concluded = False
    i = 0
    while i < len(calls):
        if signal.cancelled:
            for call in calls[i:]:
                _record(
                    agent,
                    turn,
                    step,
                    call,
                    _error(
                        "Error: tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH"
                    ),
                    with_call=True,
                )
            break
        group = [calls[i]]
        if _parallel(agent, calls[i]):
            while i + len(group) < len(calls) and _parallel(agent, calls[i + len(group)]):
                group.append(calls[i + len(group)])
        agent._write([(TOOL_CALL, _call_data(turn, step, c), None) for c in group])
        if len(group) == 1:
            outcomes = [await _run_one(agent, turn, step, group[0], signal)]
            results = outcomes
        else:
            tasks = [
                asyncio.get_running_loop().create_task(_run_one(agent, turn, step, c, signal)) for c in group
            ]
            results = []
            for call, task in zip(group, tasks):
                outcome = await _settle(task)
                results.append(outcome)
                concluded = _record(agent, turn, step, call, outcome) or concluded
            i += len(group)
            continue
        concluded = _record(agent, turn, step, group[0], results[0]) or concluded
        i += 1
    return concluded


async def _settle(task: asyncio.Task[_Outcome]) -> _Outcome:
    """Await a started tool to its end (never abandoned, even if the driver is cancelled)."""
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait({task})
        raise


def _parallel(agent: Agent, call: ToolCallChunk) -> bool:
    tool = agent.tools.get(call.name)
    return tool is not None and tool.parallel_safe and not tool.requires_approval


def _call_data(turn: int, step: int, call: ToolCallChunk) -> dict[str, Any]:
    return {"turn": turn, "step": step, "call_id": call.id, "name": call.name, "arguments": call.arguments}


async def _run_one(agent: Agent, turn: int, step: int, call: ToolCallChunk, signal: CancelSignal) -> _Outcome:
    tool: Tool | None = agent.tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(agent.tools)) or "none"
        return _error(
            f"Error: there is no tool named {call.name!r} (tools: {known})", "ToolNotFound", "TOOL_NOT_FOUND"
        )
    try:
        arguments = tool.parse_arguments(call.arguments)
    except ToolArgumentsError as exc:
        return _error(f"Error: {exc}", "InvalidArguments", "INVALID_ARGUMENTS")
    if tool.requires_approval:
        decided = await _approve(agent, turn, step, tool, call, signal)
        if decided != "allowed-once":
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
        blocks = list(freeze_content(blocks))
    except (TypeError, ValueError) as exc:
        return _error(
            f"Error: the tool returned an invalid result: {exc}", type(exc).__name__, "INVALID_RESULT"
        )
    outcome = _Outcome(blocks, is_error, None, contexts, bool(result and result.concludes_turn))
    if is_error and result is not None:
        outcome.error = {"name": "ToolError", "code": result.code or "TOOL_ERROR"}
    if signal.cancelled:
        aborted = _error("Error: tool call aborted", "AbortError", "ABORTED")
        aborted.contexts = contexts
        return aborted
    return outcome


async def _approve(
    agent: Agent, turn: int, step: int, tool: Tool, call: ToolCallChunk, signal: CancelSignal
) -> str:
    """Ask the agent's approver; exactly one ``approval/decided`` follows each ``approval/asked``."""
    approval_id = f"approval-{call.id}"
    base = {"id": approval_id, "tool": tool.name, "call_id": call.id}
    agent._write([(APPROVAL_ASKED, {**base, "turn": turn, "step": step}, None)])
    approver = agent.approver
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
    agent._write([(APPROVAL_DECIDED, {**base, "outcome": outcome}, None)])
    return outcome


def _record(
    agent: Agent, turn: int, step: int, call: ToolCallChunk, outcome: _Outcome, *, with_call: bool = False
) -> bool:
    """Commit a result (and its contexts' splice) in one write; ``True`` if it concludes the turn."""
    message = tool_result_message(call.id, outcome.blocks, is_error=outcome.is_error)
    data: dict[str, Any] = {"turn": turn, "step": step, "message": message.to_json()}
    if outcome.error is not None:
        data["error"] = outcome.error
    contexts = outcome.contexts

    def build(state: InboxState) -> Plan:
        plan = Plan()
        if with_call:
            plan.drafts.append((TOOL_CALL, _call_data(turn, step, call), None))
        plan.drafts.append((TOOL_RESULT, data, message))
        if contexts:
            sp = plan_splice(state, NEXT_STEP, len(state.next_step), 0, contexts)
            if sp is not None:
                plan.drafts.append((INBOX_SPLICED, sp.data, sp.after))
                plan.inbox = sp.after
                plan.notices.extend(("inbox/inserted", _inserted(m)) for m in sp.inserted)
        return plan

    agent._submit(build, flush=False)  # committed with the next tool/call, request or turn/end
    return outcome.concludes and not outcome.is_error


def _inserted(message: UserMessage) -> Any:
    from nbagent.agent import LiveNotice

    return LiveNotice("inbox/inserted", message)
