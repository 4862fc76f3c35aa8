"""``%agent fork``, ``%agent replay`` and ``%agent diff`` in a real kernel (SPEC §11.4)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kernel_helpers import Kernel, read_events, session_ids

import nbagent

pytestmark = pytest.mark.kernel


def test_fork_replay_and_diff_in_a_kernel(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("%followup --wait hello")
        k.run("%followup --wait again")
        (parent,) = session_ids(tmp_path / "work.nbagent.sqlite")
        out = k.run("%agent fork --before-turn 9")
        assert "has no turn 9" in out
        out = k.run("%agent fork --before-turn 2")
        assert f"forked session {parent[:8]} before turn 2 into" in out
        assert f"switch back: %agent resume {parent[:8]}" in out
        rows = {r.id: r for r in nbagent.list_sessions(tmp_path / "work.nbagent.sqlite")}
        (child,) = [sid for sid, r in rows.items() if r.parent == parent]
        listed = k.run("%agent sessions")
        assert f"* {child[:8]}" in listed and f"fork of {parent[:8]}" in listed
        assert "'nope' names no arrival of this turn" in k.run("%agent replay 2 --move nope=1")
        out = k.run("%agent replay 2 --wait")
        assert "turn 2 · done" in out  # the live view of the replayed turn, as %followup shows one
        assert "replayed turn 2: completed; compare: %agent diff 2 2" in out
        diff = k.run("%agent diff 2 2")
        assert f"a = {parent} turn 2   b = {child} turn 2" in diff
        assert "are identical: 1 step, the same requests and the same answers" in diff
        assert "has no turn 5 (its turns: 1, 2)" in k.run("%agent diff 2 5")
        events = read_events(tmp_path / "work.nbagent.sqlite", child)
        assert [e.type for e in events].count("session/forked") == 1
        assert events[-1].type == "turn/end" and events[-1].data["turn"] == 2


SETUP = """\
import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent
a = current_agent()
def lookup() -> str:
    "Look it up (and a note arrives meanwhile)."
    a.inject(nbagent.UserMessage.text("a late note", {"kind": "note"}))
    return "found"
a.add_tool(lookup)
a.set_model(ScriptedModel([Response(tool_calls=[ToolCall("lookup", id="c1")]), "done"]))
"""


def test_replay_help_seen_by_steps_late_arrivals_and_a_failed_step_in_a_kernel(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("%followup --wait hello")
        help_text = k.run("%agent replay --help")
        assert "--move ID=N" in help_text and "seen by step N" in help_text and "--drop ID" in help_text
        assert "--yes" in k.run("%agent why --help")
        k.run(SETUP)
        k.run("%followup --wait look it up")
        k.run("%agent fork --before-turn 2")
        note = k.run("print(current_agent().replay_plan(turn=2))")
        assert "seen by step 2" in note and "'a late note'" in note
        note_id = note.split("id=")[1][:8]
        assert "needs a step N >= 1" in k.run(f"%agent replay 2 --move {note_id}=0")
        k.run("current_agent().set_model(ScriptedModel([Response(failure='AUTH')]))")
        out = k.run(f"%agent replay 2 --move {note_id}=5 --wait")
        assert "note 'a late note' (seen by step 5) came after the replayed turn's last step" in out
        diff = k.run("%agent diff 2 2")
        step1 = diff.split("step 2")[0]  # the parent's second step is one the failed replay never had
        assert "b answered: (the step failed: AUTH: " in step1 and "(no such step)" not in step1


def test_why_prints_the_plan_and_ranks_the_context_in_a_kernel(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("rates = {'EUR': 1.0, 'USD': 1.1}")
        k.run("%inject rates")
        k.run("%inject prices are in EUR")
        k.run("%followup --wait What is the invoice total?")
        out = k.run("%agent why 1")
        assert "Which context mattered in turn 1" in out
        assert "3 runs (2 left out one at a time + a control)" in out
        assert "estimate: 3 requests" in out and "cost nothing (offline model)" in out
        assert "1. " in out and "noise: 0.000" in out
        rows = nbagent.list_sessions(tmp_path / "work.nbagent.sqlite")
        assert len([r for r in rows if r.parent]) == 3
        # A model that is not offline: the plan says what it would cost, and nothing runs unasked
        # (this front end cannot answer the question).
        k.run("from nbagent.notebook import current_agent; current_agent().set_model('openai:gpt-4.1')")
        out = k.run("%agent why 1", answers=["n"])
        assert "with openai:gpt-4.1" in out and "cost $" in out
        assert "run 3 replays with openai:gpt-4.1 (cost $" in out and "? [y/N]" in out
        assert "not run (%agent why N --yes runs without asking)" in out
        assert len([r for r in nbagent.list_sessions(tmp_path / "work.nbagent.sqlite") if r.parent]) == 3
        # Context pending before the turn can be dropped from a replay; the live view follows a
        # message the turn does claim.
        k.run("current_agent().set_model('echo')")
        k.run("%agent fork --before-turn 1")
        rates = k.run("print(current_agent().inbox.next_step[0].id[:8])").strip()
        out = k.run(f"%agent replay 1 --drop {rates} --wait")
        assert "turn 1 · done" in out and "replayed turn 1: completed" in out


def test_a_replay_not_waited_for_names_its_late_arrivals_in_its_cell(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("%inject the customer is ACME")
        k.run("%followup --wait What is the total?")
        k.run("%agent fork --before-turn 1")
        out = k.run('%%agent\nreplay 1 --add 4 "a late note"\nwait')
        assert "added note 'a late note' (seen by step 4) came after the replayed turn's last step" in out
        pending = k.run("from nbagent.notebook import current_agent\nprint(current_agent().inbox.next_step)")
        assert "a late note" in pending


COUNT_OPENS = """\
from nbagent.store.sqlite.store import SessionFile
leases = []
_lease = SessionFile.lease
def _counted(self, session_id):
    leases.append(session_id)
    return _lease(self, session_id)
SessionFile.lease = _counted
"""

CHILD_SCRIPT = """\
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent
calls = [ToolCall("list_variables", {}, id="k1"), ToolCall("demo__add", {"a": 40, "b": 2}, id="m1")]
current_agent().set_model(ScriptedModel([Response(tool_calls=calls), "done", "done again"]))
"""


def test_fork_adopts_its_child_with_kernel_and_mcp_tools_of_its_own(tmp_path: Path) -> None:
    """``%agent fork`` makes the child it opened current (issue #30): no close and reopen, one lease
    of the child, the parent released, the child's kernel tools and its own MCP server working."""
    pytest.importorskip("mcp")
    import sys

    from mcp_helpers import DEMO, new_tag, pids_with, wait_until
    from test_mcp_kernel import wait_listed

    db = tmp_path / "work.nbagent.sqlite"
    tag = new_tag()
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run(f"%agent mcp add demo -- {sys.executable} {DEMO} --tag {tag}")
        wait_listed(k, "demo__add")
        k.run("%followup --wait hello")
        k.run("%followup --wait again")
        (parent,) = session_ids(db)
        (first,) = pids_with(tag)
        k.run(COUNT_OPENS)
        out = k.run("%agent fork --before-turn 2")
        assert "Error" not in out, out
        (child,) = [r.id for r in nbagent.list_sessions(db) if r.parent == parent]
        forked = f"forked session {parent[:8]} before turn 2 into {child[:8]}"
        carried = "1 followup from the session it was forked from is pending: «again»"
        assert forked in out and carried in out and out.index(forked) < out.index(carried)
        assert "resumed session" not in out
        assert k.run("print(leases)").strip() == repr([child])  # opened once: one lease, the fork's
        written = [(e.seq, e.type) for e in read_events(db, child)]
        assert written[-1][1] == "session/forked"  # nothing after the fork's own event
        # the parent is closed: another process can open it, and its MCP server stopped; the child
        # has a server of its own
        asyncio.run(_open_and_close(db, parent))
        wait_until(lambda: first not in pids_with(tag), what="the parent's server stopping")
        wait_listed(k, "demo__add")
        assert len(pids_with(tag)) == 1
        k.run(CHILD_SCRIPT)
        k.run("%agent approvals read-only")
        k.run("%agent tools")
        out = k.run("%followup --wait and more")
        events = read_events(db, child)
        assert [(e.seq, e.type) for e in events][: len(written)] == written
        results = {
            e.data["message"]["content"][0]["tool_call_id"]: e.data["message"]["content"][0]
            for e in events
            if e.type == "tool/result"
        }
        assert results["m1"]["content"][0]["text"] == "40 + 2 = 42"
        assert not results["k1"].get("is_error") and not results["m1"].get("is_error")
        assert not [e for e in events if e.type == "approval/asked"]
        back = k.run(f"%agent resume {parent[:8]}")
        assert f"resumed session {parent[:8]}" in back, back


async def _open_and_close(db: Path, session_id: str) -> None:
    agent = nbagent.resume_session(db, session_id)
    await agent.close()


SLOW = """\
import asyncio
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook import current_agent
async def slow() -> str:
    "Take a long time."
    await asyncio.sleep(60)
    return "late"
current_agent().add_tool(slow)
current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall("slow", id="s1")]), "done"]))
"""


def test_forking_while_a_turn_runs_closes_the_parent_as_agent_resume_does(tmp_path: Path) -> None:
    """The parent's running turn ends aborted (cause ``closed``) as with ``%agent resume``; the child,
    forked before that turn, carries its followup and has the parent's own tool."""
    db = tmp_path / "work.nbagent.sqlite"
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        k.run("%followup --wait hello")
        k.run(SLOW)
        k.run("%followup take your time")
        (parent,) = session_ids(db)
        out = k.run("%agent fork --before-turn 2")
        assert "is pending: «take your time»" in out, out
        ended = [e for e in read_events(db, parent) if e.type == "turn/end"]
        assert ended[-1].data == {"turn": 2, "reason": {"kind": "aborted", "reason": {"kind": "closed"}}}
        assert "slow" in k.run("print(sorted(current_agent().tools))")
