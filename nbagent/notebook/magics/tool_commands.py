"""``%agent approve|deny [ID]``, ``%agent tools [on|off]`` and ``%agent approvals [ask|session|read-only]``.

``%agent approve`` decides the pending approval; typed while a turn runs and before it asks (Run All
runs the next cell at once), it waits for that turn's next question, or for the turn to end, so a
notebook that approves from a cell behaves the same at any pace. ■ stops the wait. Either way the
cell says exactly what it decided: the approval, its turn and the code.
"""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from nbagent.notebook.tools.approvals import Outcome, decided_call
from nbagent.notebook.tools.kernel_tools import TOOL_NAMES, NotebookTools, desk_of

if TYPE_CHECKING:
    from nbagent.notebook.kernel.kernel_session import KernelSession


def decide(session: KernelSession, outcome: Outcome, value: list[str]) -> None:
    """``%agent approve`` / ``%agent deny`` (``value``: an optional approval id)."""
    verb = "approve" if outcome == "allowed-once" else "deny"
    if len(value) > 1:
        raise UsageError(f"%agent {verb} takes at most one approval id")
    agent = session.current()
    if agent is None:
        print(f"nbagent: no session open; nothing to {verb}")
        return
    desk = desk_of(agent)
    if desk is None:
        print(
            f"nbagent: this session's approvals are decided by agent.approver ({agent.approver!r}), "
            f"not by %agent {verb}"
        )
        return
    by = f"%agent {verb}"
    if value:
        print(f"nbagent: {desk.decide(outcome, value[0], by=by)}")
        return
    waiter = desk.decide_next(outcome, by=by)
    if not waiter.done.done():
        idle = session.agent_loop.submit(agent.when_idle())
        try:
            session.wait(_first(waiter.done, idle))
        finally:
            desk.forget(waiter)
            idle.cancel()
    if waiter.done.done():
        decided = waiter.question
        what = f" — {decided_call(decided, early=waiter.early)}" if decided is not None else ""
        print(f"nbagent: {waiter.done.result()}{what}")
    else:
        print(f"nbagent: nothing to {verb}: the agent is {agent.status} and no approval is pending")


def tools(session: KernelSession, builtins: NotebookTools, value: list[str]) -> None:
    """``%agent tools [on|off]``: show, or offer / withdraw the built-in tools for the session."""
    if len(value) > 1 or (value and value[0] not in ("on", "off")):
        raise UsageError("use %agent tools on, %agent tools off, or %agent tools to see which are on")
    agent = session.current()
    if value:
        builtins.set_enabled(agent, value[0] == "on")
        when = "from the next request on" if agent is not None else "when the session opens"
        state = "offered" if builtins.enabled else "withdrawn"
        print(f"nbagent: built-in tools {state} ({', '.join(TOOL_NAMES)}) {when}")
        return
    if builtins.enabled:
        print(f"nbagent: built-in tools on: {', '.join(TOOL_NAMES)} (run_code asks for approval)")
    else:
        print("nbagent: built-in tools off (%agent tools on offers them again)")


def approvals(session: KernelSession, value: list[str]) -> None:
    """``%agent approvals [ask|session|read-only]``: show or set whether tools that need approval ask
    (``read-only``: MCP tools their server annotates read-only run without asking)."""
    if len(value) > 1 or (value and value[0] not in ("ask", "session", "read-only")):
        raise UsageError(
            "use %agent approvals ask, %agent approvals session, %agent approvals read-only, "
            "or %agent approvals to see it"
        )
    agent = session.ensure()
    assert agent is not None
    if value and value[0] == "read-only":
        agent.mcp.allow_read_only = True
    desk = desk_of(agent)
    if desk is None:
        print(f"nbagent: approvals are decided by agent.approver ({agent.approver!r}); no policy to set")
        return
    if value and value[0] != "read-only":
        desk.policy = "session" if value[0] == "session" else "ask"
        if desk.policy == "ask":
            desk.allowed_tools.clear()
            agent.mcp.allow_read_only = False
    read_only = "; MCP tools annotated read-only run without asking" if agent.mcp.allow_read_only else ""
    print(f"nbagent: {_policy_line(desk)}{read_only}")


def _policy_line(desk: Any) -> str:
    if desk.policy == "session":
        return "approvals: session — tools that need approval run without asking until the session ends"
    allowed = sorted(desk.allowed_tools)
    also = f"; allowed for this session: {', '.join(allowed)}" if allowed else ""
    return (
        "approvals: ask — each call asks in its turn's cell (or %agent approve / %agent deny); "
        f"unanswered for {desk.timeout:g} s with nobody there to ask, it is unavailable{also}"
    )


def _first(*futures: concurrent.futures.Future[Any]) -> concurrent.futures.Future[None]:
    """A future done as soon as any of ``futures`` is."""
    either: concurrent.futures.Future[None] = concurrent.futures.Future()

    def done(_f: Any) -> None:
        if not either.done():
            try:
                either.set_result(None)
            except concurrent.futures.InvalidStateError:
                pass

    for f in futures:
        f.add_done_callback(done)
    return either
