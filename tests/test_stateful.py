"""Random interleavings of deliveries, inbox operations, cancels, close/resume and model answers.

After every step: the invariants hold, the live inbox equals the replay of the stored splices, and
every delivered message has at most one fate; at the end each has exactly one (or is pending).
"""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import nbagent
from nbagent import ToolResult, UserMessage
from nbagent.core.inbox import InboxState, replay_splice
from nbagent.core.retry import RetryPolicy
from nbagent.models import Failure, Response, ScriptedModel, ToolCall
from nbagent.testing import check_invariants

TEXTS = st.text(alphabet="abcxyz ", min_size=1, max_size=6)


def fates(events, delivered: set[str]) -> dict[str, list[str]]:
    """What became of each delivered message id, by replaying the log."""
    out: dict[str, list[str]] = collections.defaultdict(list)
    state = InboxState()
    claimed: set[str] = set()
    admitted: set[str] = set()
    for ev in events:
        d = ev.data
        if ev.type == "agent/inbox/spliced":
            queue = state.queue(d["target"])
            removed = queue[d["start"] : d["start"] + d.get("removed_count", 0)]
            if d.get("outcome") == "canceled":
                for m in removed:
                    out[m.id].append("canceled")
            else:
                claimed |= {m.id for m in removed}
            state = replay_splice(state, d, ev.seq)
        elif ev.type == "user/message":
            admitted.add(d["id"])
            if d["id"] in delivered:
                out[d["id"]].append("admitted")
        elif ev.type == "turn/end":
            for mid in claimed - admitted:
                out[mid].append(f"dropped-{d['reason']['kind']}")
            claimed, admitted = set(), set()
    for m in state.next_turn + state.next_step:
        out[m.id].append("pending")
    for mid in claimed - admitted:
        out[mid].append("claimed-in-open-turn")
    return {k: v for k, v in out.items() if k in delivered}


@nbagent.tool
async def note(text: str, with_context: bool = False) -> ToolResult:
    """Record a note."""
    await asyncio.sleep(0)
    extra = (
        [UserMessage.text(f"ctx:{text}", source={"kind": "plugin", "plugin": "note"})] if with_context else []
    )
    return ToolResult(f"noted {text}", additional_contexts=extra)


@nbagent.tool(parallel_safe=True)
async def peek(key: str) -> str:
    """Peek at a key."""
    await asyncio.sleep(0)
    return key


class AgentMachine(RuleBasedStateMachine):
    def __init__(self, location: str | Path) -> None:
        super().__init__()
        self.path = location
        self.loop = asyncio.new_event_loop()
        self.script: collections.deque[Response] = collections.deque()
        self.model = ScriptedModel([])
        self.model.responses = _Endless(self.script)  # type: ignore[assignment]
        self.delivered: set[str] = set()
        self.reject_next = False
        self.agent = self.loop.run_until_complete(self._open())

    async def _open(self) -> nbagent.Agent:
        agent = nbagent.open_session(
            self.path, model=self.model, tools=[note, peek], retry=RetryPolicy(base_delay_ms=0)
        )
        self._hook(agent)
        return agent

    def _hook(self, agent: nbagent.Agent) -> None:
        async def maybe_reject(step, next):
            if self.reject_next:
                self.reject_next = False
                return nbagent.Reject()
            return await next()

        agent.hooks.pre_step.add(maybe_reject)

    def _spin(self, n: int) -> None:
        for _ in range(n):
            self.loop.run_until_complete(asyncio.sleep(0))

    # -- deliveries ---------------------------------------------------------------------------------

    @rule(text=TEXTS, kind=st.sampled_from(["followup", "steer", "inject"]))
    def deliver(self, text: str, kind: str) -> None:
        m = UserMessage.text(text, source={"kind": "user" if kind != "inject" else "cell"})
        getattr(self.agent, kind)(m)
        self.delivered.add(m.id)

    @rule(data=st.data())
    def remove_pending(self, data: st.DataObject) -> None:
        pending = self.agent.inbox.next_turn + self.agent.inbox.next_step
        if pending:
            victim = data.draw(st.sampled_from(pending))
            assert self.agent.inbox.remove(victim.id)
            assert not self.agent.inbox.remove(victim.id)

    @rule(data=st.data(), text=TEXTS)
    def replace_pending(self, data: st.DataObject, text: str) -> None:
        pending = self.agent.inbox.next_turn + self.agent.inbox.next_step
        if pending:
            victim = data.draw(st.sampled_from(pending))
            new = UserMessage.text(text, source={"kind": "cell"})
            assert self.agent.inbox.replace(victim.id, new)
            self.delivered.add(new.id)

    @rule(
        start=st.integers(-3, 3),
        count=st.integers(0, 2),
        text=TEXTS,
        queue=st.sampled_from(["next-turn", "next-step"]),
    )
    def splice(self, start: int, count: int, text: str, queue: str) -> None:
        new = UserMessage.text(text, source={"kind": "cell"})
        self.agent.inbox.splice(queue, start, count, [new])  # type: ignore[arg-type]
        self.delivered.add(new.id)

    @rule()
    def clear(self) -> None:
        self.agent.inbox.clear()

    @rule(keep=st.booleans())
    def cancel(self, keep: bool) -> None:
        self.agent.cancel(keep_inbox=keep)

    @rule()
    def reject_next_step(self) -> None:
        self.reject_next = True

    # -- the model's answers ------------------------------------------------------------------------

    @rule(
        kind=st.sampled_from(["text", "tools", "parallel", "retryable", "fatal", "max-tokens"]),
        text=TEXTS,
        ctx=st.booleans(),
    )
    def script_answer(self, kind: str, text: str, ctx: bool) -> None:
        if kind == "text":
            r = Response(text, chunk_size=2)
        elif kind == "tools":
            r = Response(
                text, tool_calls=[ToolCall("note", {"text": text, "with_context": ctx}), ToolCall("missing")]
            )
        elif kind == "parallel":
            r = Response(tool_calls=[ToolCall("peek", {"key": "a"}), ToolCall("peek", {"key": "b"})])
        elif kind == "retryable":
            r = Response(failure=Failure("busy", "RATE_LIMIT", 429, retry_after_ms=0))
        elif kind == "fatal":
            r = Response(failure="BAD_REQUEST")
        else:
            r = Response(text, tool_calls=[ToolCall("note", {"text": text})], finish="max-tokens")
        self.script.append(r)

    # -- time, close and resume ---------------------------------------------------------------------

    @rule(n=st.integers(1, 6))
    def spin(self, n: int) -> None:
        self._spin(n)

    @rule()
    def settle(self) -> None:
        self.loop.run_until_complete(asyncio.wait_for(self.agent.when_idle(), 10))

    @rule()
    def close_and_resume(self) -> None:
        self.loop.run_until_complete(self.agent.close())
        before = self.agent.events
        self.agent = self.loop.run_until_complete(self._resume())
        assert self.agent.events[: len(before)] == before
        assert self.agent.status == "idle"

    async def _resume(self) -> nbagent.Agent:
        agent = nbagent.resume_session(
            self.path,
            self.agent.session_id,
            model=self.model,
            tools=[note, peek],
            retry=RetryPolicy(base_delay_ms=0),
        )
        self._hook(agent)
        return agent

    # -- checks ---------------------------------------------------------------------------------------

    @invariant()
    def log_is_consistent(self) -> None:
        events = self.agent.events
        check_invariants(events, inbox=self.agent.inbox)
        for mid, seen in fates(events, self.delivered).items():
            assert len(seen) <= 1, f"message {mid} has fates {seen}"

    @precondition(lambda self: True)
    @rule()
    def requests_match_the_log(self) -> None:
        self.loop.run_until_complete(asyncio.wait_for(self.agent.when_idle(), 10))
        check_invariants(self.agent.events, requests=self.model.requests)

    def teardown(self) -> None:
        try:
            self.loop.run_until_complete(asyncio.wait_for(self.agent.when_idle(), 10))
            events = self.agent.events
            seen = fates(events, self.delivered)
            for mid in self.delivered:
                assert len(seen.get(mid, [])) == 1, f"message {mid} ended as {seen.get(mid)}"
            self.loop.run_until_complete(self.agent.close())
        finally:
            self.loop.close()


class _Endless(list):
    """A script that answers from the machine's deque, or with plain text when it is empty."""

    def __init__(self, script: collections.deque[Response]) -> None:
        super().__init__()
        self.script = script

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, i):  # type: ignore[override]
        return self.script.popleft() if self.script else Response("ok")


@pytest.mark.stores
def test_agent_machine(db):
    """Every example opens a new session in the same store (sessions are told apart by id)."""
    run_state_machine_as_test(
        lambda: AgentMachine(db),
        settings=settings(
            max_examples=40,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
