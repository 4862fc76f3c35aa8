"""The agent-in-the-notebook tutorial runs offline in a real kernel, cell by cell (nbclient) and all at
once (Run All): the model lists variables, reads the saved notebook, calls the tutorial's MCP server, and
proposes a plotting cell (shown, not inserted: nobody clicks in a headless run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kernel_helpers import Kernel, read_events

from nbagent.notebook.kernel.headless import output_text, run_notebook
from nbagent.testing import check_invariants

pytestmark = pytest.mark.kernel
pytest.importorskip("mcp")
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAME = "agent-in-the-notebook"


def copied(tmp_path: Path) -> Path:
    shutil.copy(NOTEBOOKS / "pallets_mcp_server.py", tmp_path)
    return Path(shutil.copy(NOTEBOOKS / f"{NAME}.ipynb", tmp_path))


def check_the_turn(db: Path) -> None:
    events = read_events(db)
    check_invariants(events)
    calls = [e.data["name"] for e in events if e.type == "tool/call"]
    assert calls == ["list_variables", "read_notebook", "pallets__boxes_to_pallets", "propose_cell"]
    texts = [e.data["message"]["content"][0]["content"][0]["text"] for e in events if e.type == "tool/result"]
    assert texts[3].startswith("Proposed cell 2.1 to the user (1 line)")
    answers = [e.data["message"]["content"] for e in events if e.type == "assistant/message"]
    assert [b["text"] for b in answers[-1] if b["type"] == "text"] == [
        "No notebook note yet: the proposed cell was not inserted."
    ]  # nobody clicked
    assert "sales" in texts[0]
    assert texts[1].startswith(f"Notebook {NAME}.ipynb, as saved at ")
    assert "[3] markdown\n## Connect an MCP server" in texts[1]
    assert texts[2] == "295 boxes fill 4 pallets with 55 boxes left over"
    assert not [e for e in events if e.type == "approval/asked"]


def test_cell_by_cell(tmp_path: Path) -> None:
    path = copied(tmp_path)
    nb = run_notebook(path, save=False, env={"NBAGENT_DB": ""})
    text = "\n".join(output_text(c) for c in nb.cells if c.cell_type == "code")
    assert "MCP server 'pallets' (stdio: " in text
    assert "pallets · stdio · " in text and "· ready\n    tools: pallets__boxes_to_pallets" in text
    assert "MCP server 'pallets' removed" in text
    check_the_turn(tmp_path / f"{NAME}.nbagent.sqlite")


def test_run_all(tmp_path: Path) -> None:
    path = copied(tmp_path)
    cells = json.loads(path.read_text())["cells"]
    codes = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    with Kernel(tmp_path, path.name) as kernel:
        result = kernel.run_all(codes)
        assert all(result.reply(i)["status"] == "ok" for i in range(len(codes)))
    check_the_turn(tmp_path / f"{NAME}.nbagent.sqlite")
