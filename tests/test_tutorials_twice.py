"""Each tutorial starts a session of its own (SPEC §9.5, #33.5): a second Run All in the same folder,
headless or from a front end, gives the same outputs as the first (up to session ids and times)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from kernel_helpers import Kernel, read_events, session_ids

from nbagent.notebook.kernel.headless import output_text, run_notebook

pytestmark = pytest.mark.kernel
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TUTORIALS = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))

_VARYING = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # message ids
    r"|\b[0-9a-f]{8,}\b"  # session ids
    r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?(?:\.\d+)?Z?"  # times
    r"|\b\d+(?:\.\d+)? ?(?:ms|s)\b"  # durations
    r"|0x[0-9a-f]+"  # object addresses
)


def same_each_run(text: str) -> str:
    """A cell's text without what differs from run to run by nature: ids, times, durations, the
    one-time hint given where a session file is first created, and in `%agent sessions` the earlier
    runs' sessions (the file keeps them: the list grows by one each run), and whether the model's
    call an `%agent approve` answered was asked before that command ran or after (Run All sends
    every cell at once: the turn and the command race, and either is answered the same)."""
    text = text.replace(", which the model asked after this command ran", "")
    lines = [line for line in text.splitlines() if not line.startswith("nbagent: for git")]
    if lines and lines[0].startswith("sessions in "):
        lines = [line for line in lines if not line.startswith("  ")]  # keep the current (*) one
    return _VARYING.sub("…", "\n".join(lines))


def headless_outputs(path: Path) -> list[str]:
    nb = run_notebook(path, save=False, timeout=120, env={"NBAGENT_DB": ""})
    return [same_each_run(output_text(c)) for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("name", TUTORIALS)
def test_a_second_headless_run_all_gives_the_same_outputs(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.ipynb"
    shutil.copy(NOTEBOOKS / f"{name}.ipynb", path)
    for extra in NOTEBOOKS.glob(f"{name}.*"):
        if extra.suffix != ".ipynb":
            shutil.copy(extra, tmp_path / extra.name)  # a cassette, recorded answers
    if (NOTEBOOKS / "pallets_mcp_server.py").exists():
        shutil.copy(NOTEBOOKS / "pallets_mcp_server.py", tmp_path)
    first = headless_outputs(path)
    second = headless_outputs(path)
    assert second == first


def test_a_second_run_all_from_a_front_end_gives_the_same_outputs(tmp_path: Path) -> None:
    """JupyterLab's Run All, each time in a fresh kernel that knows its notebook (and would otherwise
    continue the latest session): the turn-order tutorial's second session holds what its first holds,
    so the model receives the same messages and the echo answers count the same (5, not 11)."""
    import nbformat

    name = "debugging-turn-order"
    shutil.copy(NOTEBOOKS / f"{name}.ipynb", tmp_path / f"{name}.ipynb")
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    codes = [c.source for c in nb.cells if c.cell_type == "code"]
    for _ in range(2):
        with Kernel(tmp_path, notebook=f"{name}.ipynb") as k:
            result = k.run_all(codes)
            assert all(result.reply(i)["status"] == "ok" for i in range(len(codes)))
    db = tmp_path / f"{name}.nbagent.sqlite"
    first, second = sorted(session_ids(db), key=lambda sid: read_events(db, sid)[0].time)
    assert story(db, second) == story(db, first)
    assert any(text.startswith("echo: I received 5 messages.") for _, text in story(db, second))


def story(db: Path, session_id: str) -> list[tuple[str, str]]:
    """What the model received and answered, message by message."""
    said = []
    for e in read_events(db, session_id):
        if e.type in ("user/message", "assistant/message"):
            message = e.data if e.type == "user/message" else e.data["message"]
            text = " ".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")
            said.append((e.type, same_each_run(text)))
    return said
