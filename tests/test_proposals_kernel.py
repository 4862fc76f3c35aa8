"""``propose_cell`` in a real kernel (SPEC §9.7): after a ``--wait`` cell, a front end that does not
insert proposed cells itself gets the proposal as IPython's next input; nbagent's lab extension (it
answers ``{"request": "hello"}`` with ``{"inserts": true}``) does not."""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import KERNELS, Kernel, read_events

pytestmark = pytest.mark.kernel

CODE = "sales.plot.bar(x='region', y='boxes')"
SETUP = (
    "import nbagent.notebook.tools.front_end_cells as front_end_cells\n"
    "front_end_cells.TIMEOUT = 60  # a loaded machine answers late; this test's front end always answers\n"
    "from nbagent.models import Response, ScriptedModel, ToolCall\n"
    "from nbagent.notebook import current_agent\n"
    "current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall('propose_cell', "
    f"{{'code': {CODE!r}}})]), 'proposed']))\n"
)


def serve(kernel: Kernel, code: str, hello: dict[str, Any] | None) -> tuple[list[Any], dict[str, Any]]:
    """Execute ``code`` acting as the front end: answer each ``nbagent.notebook`` comm with ``hello``
    (or close it when ``None``); return the requests the kernel asked and the execute reply."""
    msg_id = kernel.send(code)
    asked: list[Any] = []
    idle = False
    deadline = time.monotonic() + 60
    while not idle:
        assert time.monotonic() < deadline, "the cell did not finish"
        try:
            msg = kernel.kc.iopub_channel.get_msg(timeout=0.1)
        except queue.Empty:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_open" and content.get("target_name") == "nbagent.notebook":
            asked.append(content["data"])
            reply_type = "comm_msg" if hello is not None else "comm_close"
            reply = kernel.kc.session.msg(reply_type, {"comm_id": content["comm_id"], "data": hello or {}})
            kernel.kc.shell_channel.send(reply)
        idle = (
            kind == "status"
            and content["execution_state"] == "idle"
            and msg["parent_header"].get("msg_id") == msg_id
        )
    while True:
        reply = kernel.kc.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg_id:
            return asked, reply["content"]


@pytest.mark.parametrize("kernel_python", KERNELS)
@pytest.mark.parametrize("front_end", ["inserts", "does-not-insert"])
def test_a_wait_cell_sets_the_proposal_as_next_input_only_where_nobody_inserts(
    tmp_path: Path, front_end, kernel_python
):
    with Kernel(tmp_path, "work.ipynb", python=kernel_python) as kernel:
        kernel.run("%load_ext nbagent")
        kernel.run(SETUP)
        hello = {"inserts": True} if front_end == "inserts" else None
        asked, reply = serve(kernel, "%followup --wait plot it", hello)
        events = read_events(tmp_path / "work.nbagent.sqlite")
    assert asked == [{"request": "hello"}]
    assert reply["status"] == "ok"
    next_inputs = [p for p in reply.get("payload", []) if p.get("source") == "set_next_input"]
    if front_end == "inserts":
        assert next_inputs == []
    else:
        assert [(p["text"], p["replace"]) for p in next_inputs] == [(CODE, False)]
    (result,) = [e for e in events if e.type == "tool/result"]
    assert result.data["message"]["content"][0]["content"][0]["text"].startswith("Proposed cell 1.1 ")
