"""A kernel restart never strands a followup carried over from before it (issue #22 item 1).

A restart here is what JupyterLab's "Restart kernel" is to the session file: a fresh kernel on the same
notebook. The followups still pending in the file are announced by the first magic; the next waking
magic (``%followup``, ``%steer``, ``%agent run``) runs them first, each with its live view and its
approval prompts in that cell.
"""

from __future__ import annotations

import time

import kernel_helpers
import pytest
from kernel_helpers import Kernel, RunAll, read_events, wait_for

from nbagent.testing import check_invariants

pytestmark = pytest.mark.kernel

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
TIMELINE_MIME = "application/vnd.nbagent.timeline+json"


def scripted(*responses: str) -> str:
    return (
        "from nbagent.models import Response, ScriptedModel, ToolCall\n"
        "from nbagent.notebook import current_agent\n"
        f"current_agent().set_model(ScriptedModel([{', '.join(responses)}]))\n"
    )


SETUP = scripted(
    "Response(tool_calls=[ToolCall('run_code', {'code': 'x = 41 + 1'}, id='c0')])",
    "'second answered'",
    "'third answered'",
)


def asked_in_turn(turn: int) -> str:
    """Kernel code that returns once the agent has asked an approval in ``turn`` (or fails)."""
    return (
        "import time\n"
        "from nbagent.notebook import current_agent\n"
        "_deadline = time.monotonic() + 30\n"
        "while not any(e.type == 'approval/asked' and e.data.get('turn') == "
        f"{turn} for e in current_agent().events):\n"
        "    assert time.monotonic() < _deadline, 'no approval asked'\n"
        "    time.sleep(0.02)\n"
    )


kernel = kernel_helpers.loaded_kernel  # the fixture, under the name the tests use
db = kernel_helpers.work_db


def strand_a_followup(k: Kernel) -> None:
    """Turn 1 waits for an approval, a second followup queues behind it, and the kernel restarts."""
    k.run(SETUP)
    k.run("%followup first")
    wait_for(k, "approval/asked")
    k.run("%followup second")
    k.restart()
    k.run("%load_ext nbagent")


def last_plain(result: RunAll, display_id: str) -> str:
    updates = result.updates(display_id)
    return updates[-1].content["data"]["text/plain"] if updates else ""


def test_the_carried_over_followup_runs_in_the_cell_that_wakes_it_with_its_prompt_there(kernel):
    strand_a_followup(kernel)
    setup = kernel.run(SETUP)
    assert "1 followup from before the restart is pending: «second»" in setup
    status = kernel.run("%agent status")
    assert "status: idle" in status
    assert "pending: followup «second» (from before the restart)" in status
    assert "runs next: the next %followup, %steer or %agent run starts it" in status

    result = kernel.run_all(
        ["%followup third", asked_in_turn(2), "%agent status", "%agent approve", "%agent wait"]
    )
    assert [result.reply(i)["status"] for i in range(5)] == ["ok"] * 5
    said = result.text(0)
    assert "runs first, in this cell: followup «second» (from before the restart)" in said
    carried, own = result.display_ids(0)
    prompts = [m for m in result.updates(carried) if WIDGET_VIEW in m.content["data"]]
    assert prompts, "the carried-over followup's approval prompt is shown in the cell that woke it"
    assert "x = 41 + 1" in prompts[0].content["data"]["text/plain"]
    # The prompt carries its turn's bundle, naming the session, so a front end finds the turn after
    # a restart (issue #32 item 12; tests/browser/test_restart_browser.py).
    bundle = prompts[0].content["data"][TIMELINE_MIME]
    assert bundle["scope"] == {"turn": 2} and bundle["status"] == "running"
    assert bundle["session"]["file"] == db(kernel).name
    assert read_events(db(kernel), bundle["session"]["id"])  # the session the kernel writes
    status = result.text(2)
    assert "running: turn 2 «second»" in status
    assert "pending: followup «third»" in status
    assert "turn 2: completed" in last_plain(result, carried)
    assert "turn 3: completed" in last_plain(result, own)
    assert "inbox · queued" not in last_plain(result, own)
    assert kernel.run("print(x)") == "42\n"
    events = read_events(db(kernel))
    check_invariants(events)
    decided = [e.data["outcome"] for e in events if e.type == "approval/decided"]
    assert decided == ["unavailable", "allowed-once"]


def test_agent_run_starts_the_parked_followup_in_its_cell_and_says_when_nothing_is_pending(kernel):
    strand_a_followup(kernel)
    kernel.run(SETUP)
    result = kernel.run_all(["%agent run", asked_in_turn(2), "%agent approve", "%agent wait", "%agent run"])
    assert [result.reply(i)["status"] for i in range(5)] == ["ok"] * 5
    assert "runs first, in this cell: followup «second» (from before the restart)" in result.text(0)
    (carried,) = result.display_ids(0)
    assert any(WIDGET_VIEW in m.content["data"] for m in result.updates(carried))
    assert "turn 2: completed" in last_plain(result, carried)
    assert "nothing pending: no turn started" in result.text(4)


def updates_until(k: Kernel, result: RunAll, display_id: str, text: str, timeout: float = 30) -> str:
    """Read IOPub into ``result`` until an update of ``display_id`` shows ``text``; its text/plain."""
    import queue

    deadline = time.monotonic() + timeout
    while True:
        shown = [m.content["data"]["text/plain"] for m in result.updates(display_id)]
        if any(text in s for s in shown):
            return next(s for s in shown if text in s)
        assert time.monotonic() < deadline, f"no update of {display_id} showing {text!r}: {shown}"
        try:
            msg = k.kc.iopub_channel.get_msg(timeout=0.1)
        except queue.Empty:
            continue
        from kernel_helpers import Received

        result.iopub.append(Received(time.monotonic(), msg))


def test_agent_show_as_the_first_magic_shows_empty_widgets_that_the_first_delivery_fills(tmp_path):
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        result = k.run_all(["%agent show"])
        assert "these show it once %inject, %followup or %steer starts one" in result.text(0)
        inbox, timeline = result.display_ids(0)
        assert list(tmp_path.glob("*.sqlite*")) == []  # showing created nothing
        noted = k.run_all(["%inject a note for later"])  # the first delivery opens the session
        result.iopub.extend(noted.iopub)
        assert "a note for later" in updates_until(k, result, inbox, "a note for later")
        asked = k.run_all(["%followup hello from the first cell", "%agent wait"])
        result.iopub.extend(asked.iopub)
        assert "next-step: empty" in updates_until(k, result, inbox, "Inbox · 0 pending")
        turn = "Turn 1 «hello from the first cell» · completed"
        assert turn in updates_until(k, result, timeline, turn)


def test_a_turn_has_the_same_head_in_the_followup_cell_and_the_steer_cell_that_joined_it(tmp_path):
    timeline = "application/vnd.nbagent.timeline+json"
    setup = (
        "from nbagent.models import Response, ScriptedModel\nfrom nbagent.notebook import current_agent\n"
        "current_agent().set_model(ScriptedModel([Response('a long first answer', chunk_size=2, "
        "chunk_delay=0.05), 'steered answer']))\n"
    )
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        result = k.run_all([setup, "%followup first question", "%steer steer it", "%agent wait"])
        heads = []
        for cell in (1, 2):
            (display,) = result.display_ids(cell)
            final = result.updates(display)[-1].content["data"]
            (turn,) = [n for n in final[timeline]["nodes"] if n["type"] == "turn"]
            heads.append((turn["turn"], turn["title"], turn["steps"], turn["duration_text"], turn["status"]))
    assert heads[0] == heads[1]
    assert heads[0][:3] == (1, "first question", 2)


def test_the_resume_line_names_the_turn_a_restart_cut_short(kernel):
    """Issue 35, item 6: the first magic after a restart says which turn the restart cut short."""
    strand_a_followup(kernel)
    said = kernel.run(SETUP)
    assert "nbagent: resumed session " in said
    assert "(1 turn; turn 1 was cut short by a kernel restart, last active " in said
    assert "1 followup from before the restart is pending: «second»" in said


def test_a_fork_does_not_say_its_pending_followups_come_from_before_a_restart(kernel):
    """Issue 35, item 6: a fork carries its parent's pending followup; there was no restart."""
    kernel.run(SETUP)
    kernel.run("%followup first")
    wait_for(kernel, "approval/asked")
    kernel.run("%followup second")
    kernel.run("%agent deny")
    kernel.run("%agent wait")
    forked = kernel.run("%agent fork --before-turn 2")  # «second» was pending before turn 2 took it
    assert "from before the restart" not in forked
    status = kernel.run("%agent status")
    assert "pending: followup «second» (from the session it was forked from)" in status, status
    assert "restart" not in status
