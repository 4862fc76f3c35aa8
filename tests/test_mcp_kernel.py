"""``%agent mcp …`` in a real ipykernel: servers added from cells, offered to the notebook's session,
listed with their state and tools, removed, and gone with the kernel (no orphan processes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kernel_helpers import Kernel, read_events
from mcp_helpers import BROKEN, DEMO, new_tag, pids_with, wait_until

pytestmark = pytest.mark.kernel
pytest.importorskip("mcp")


def wait_listed(kernel: Kernel, text: str) -> str:
    """Run ``%agent mcp list`` until its output holds ``text``; return that output."""
    seen: list[str] = []

    def listed() -> bool:
        seen.append(kernel.run("%agent mcp list", store_history=False))
        return text in seen[-1]

    wait_until(listed, what=f"%agent mcp list showing {text!r} (last: {seen[-1] if seen else ''!r})")
    return seen[-1]


def scripted_call(name: str, arguments: dict[str, object]) -> str:
    return (
        "from nbagent.models import Response, ScriptedModel, ToolCall\n"
        "from nbagent.notebook import current_agent\n"
        f"current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall({name!r}, {arguments!r}, "
        "id='m1')]), 'done']))\n"
    )


def test_a_server_added_from_a_cell_serves_the_notebook_s_session_and_is_removed(tmp_path: Path):
    tag = new_tag()
    with Kernel(tmp_path) as kernel:
        kernel.run("%load_ext nbagent")
        out = kernel.run(f"%agent mcp add demo -- {sys.executable} {DEMO} --tag {tag}")
        assert "MCP server 'demo' (stdio:" in out and "is starting" in out
        listed = wait_listed(kernel, "· ready")
        assert f"demo · stdio · {sys.executable} {DEMO} --tag {tag} · ready" in listed
        assert "demo__add" in listed and "demo__write_note" in listed
        assert "read-only run without asking" in kernel.run("%agent approvals read-only")
        kernel.run(scripted_call("demo__add", {"a": 40, "b": 2}))
        kernel.run("%followup --wait add them")
        events = read_events(tmp_path / "work.nbagent.sqlite")
        (result,) = [e for e in events if e.type == "tool/result"]
        assert result.data["message"]["content"][0]["content"][0]["text"] == "40 + 2 = 42"
        assert not [e for e in events if e.type == "approval/asked"]
        assert len(pids_with(tag)) == 1
        assert "removed" in kernel.run("%agent mcp remove demo")
        assert pids_with(tag) == []
        assert "no MCP servers" in kernel.run("%agent mcp list")


def test_load_reads_the_common_json_and_list_says_why_a_server_failed(tmp_path: Path):
    tag = new_tag()
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {"command": sys.executable, "args": [DEMO, "--tag", tag]},
                    "broken": {"command": sys.executable, "args": [BROKEN]},
                    "socket": {"type": "websocket", "url": "ws://127.0.0.1:9/ws"},
                }
            }
        )
    )
    with Kernel(tmp_path) as kernel:
        kernel.run("%load_ext nbagent")
        out = kernel.run(f"%agent mcp load {config}")
        assert "'demo'" in out and "'broken'" in out
        # an entry that cannot be used is one line, and the others are still added
        assert (
            f"nbagent: {config}: MCP server 'socket': unknown type 'websocket'; use stdio, http or sse; not added"
            in out
        )
        listed = wait_listed(kernel, "broken · stdio")
        listed = wait_listed(kernel, "why:")
        assert "why: could not start" in listed and "DEMO_TOKEN is not set" in listed
        listed = wait_listed(kernel, "demo__add")
        assert "UsageError" in kernel.run("%agent mcp add demo http://127.0.0.1:1/mcp")
        assert "UsageError" in kernel.run("%agent mcp remove nobody")
        assert "UsageError" in kernel.run("%agent mcp add lonely")


@pytest.mark.parametrize("how", ["shutdown", "kill"])
def test_no_server_process_outlives_the_kernel(tmp_path: Path, how: str):
    tag = new_tag()
    kernel = Kernel(tmp_path)
    try:
        kernel.run("%load_ext nbagent")
        kernel.run(f"%agent mcp add one -- {sys.executable} {DEMO} --tag {tag}")
        kernel.run(f"%agent mcp add two -- {sys.executable} {DEMO} --tag {tag}")
        wait_listed(kernel, "two__add")
        wait_listed(kernel, "one__add")
        assert len(pids_with(tag)) == 2
    finally:
        kernel.kc.stop_channels()
        kernel.km.shutdown_kernel(now=how == "kill")
    wait_until(lambda: not pids_with(tag), what=f"the servers exiting after the kernel's {how}")


def test_a_new_session_gets_the_kernel_s_servers_with_fresh_processes(tmp_path: Path):
    tag = new_tag()
    with Kernel(tmp_path) as kernel:
        kernel.run("%load_ext nbagent")
        kernel.run(f"%agent mcp add demo -- {sys.executable} {DEMO} --tag {tag}")
        wait_listed(kernel, "demo__add")
        (first,) = pids_with(tag)
        kernel.run("%agent new")
        wait_listed(kernel, "demo__add")
        wait_until(lambda: first not in pids_with(tag), what="the old session's server stopping")
        assert len(pids_with(tag)) == 1
        kernel.run(scripted_call("demo__add", {"a": 1, "b": 2}))
        kernel.run("%agent approvals read-only")
        kernel.run("%followup --wait add")
        session = kernel.run("from nbagent.notebook import current_agent; print(current_agent().session_id)")
        events = read_events(tmp_path / "work.nbagent.sqlite", session.strip())
    (result,) = [e for e in events if e.type == "tool/result"]
    assert result.data["message"]["content"][0]["content"][0]["text"] == "1 + 2 = 3"


def test_an_mcp_call_asks_in_the_notebook_and_agent_approve_lets_it_run(tmp_path: Path):
    notes = tmp_path / "notes.txt"
    with Kernel(tmp_path) as kernel:
        kernel.run("%load_ext nbagent")
        kernel.run(f"import os; os.environ['DEMO_NOTES'] = {str(notes)!r}")
        # the server gets the SDK's default environment plus what its entry names (SPEC §9.7)
        entry = {
            "command": sys.executable,
            "args": [DEMO, "--tag", new_tag()],
            "env": {"DEMO_NOTES": "${DEMO_NOTES}"},
        }
        (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": entry}}))
        kernel.run(f"%agent mcp load {tmp_path / 'mcp.json'}")
        kernel.run("%agent approvals read-only")  # write_note is not read-only: it still asks
        wait_listed(kernel, "demo__write_note")
        kernel.run(scripted_call("demo__write_note", {"text": "from the model"}))
        kernel.run("%followup please note it")
        assert "approved demo__write_note (%agent approve)" in kernel.run("%agent approve")
        kernel.run("%agent wait")
        events = read_events(tmp_path / "work.nbagent.sqlite")
    decided = [e.data["outcome"] for e in events if e.type == "approval/decided"]
    assert decided == ["allowed-once"]
    (result,) = [e for e in events if e.type == "tool/result"]
    assert result.data["message"]["content"][0]["content"][0]["text"] == "noted: from the model"
    assert notes.read_text() == "from the model\n"
