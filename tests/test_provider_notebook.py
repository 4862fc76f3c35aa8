"""``notebooks/providers.ipynb`` executes offline: live cells skip themselves without keys or servers,
and its replayed section answers from the committed cassette."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "providers.ipynb"
CASSETTE = NOTEBOOK.with_name("providers.nbagent-cassette.json")


@pytest.mark.kernel
def test_providers_notebook_runs_offline_without_errors(monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")  # the discard port: nothing answers there
    for name in (NOTEBOOK.name, CASSETTE.name):  # the kernel finds the one notebook in its folder
        shutil.copy(NOTEBOOK.parent / name, tmp_path / name)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    # Stream outputs may arrive in several pieces under load: join them as the kernel wrote them.
    text = "".join(
        out.get("text", "") + out.get("data", {}).get("text/plain", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", ())
    )
    assert "skipped: set OPENAI_API_KEY" in text
    assert "skipped: set ANTHROPIC_API_KEY" in text
    assert "skipped: no Ollama server answered at http://127.0.0.1:9/v1" in text
    assert "error AUTH" in text and "ANTHROPIC_API_KEY" in text
    assert not any(out.get("output_type") == "error" for cell in nb.cells for out in cell.get("outputs", ()))
    # The replayed section answers from the committed cassette, with no key and no network:
    assert (
        "A Jupyter kernel is the process that runs a notebook's code and sends the results back to the notebook."
        in text
    )
    assert "with the cassette providers.nbagent-cassette.json (mode none: answers from it" in text
    # skipped cells create no session file; only the replayed section's session is there
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "providers.ipynb",
        "providers.nbagent-cassette.json",
        "providers.nbagent.sqlite",
    ]


@pytest.mark.kernel
def test_nbval_replays_the_tutorial_and_fails_the_cell_of_an_unseen_request(tmp_path):
    """The README's CI recipe: ``pytest --nbval-lax`` passes offline on the committed cassette, and a
    prompt changed since the recording fails its cell, naming what differs."""
    import os
    import subprocess
    import sys

    pytest.importorskip("nbval")
    for name in (NOTEBOOK.name, CASSETTE.name):
        shutil.copy(NOTEBOOK.parent / name, tmp_path / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "NBAGENT"))}
    env["OLLAMA_HOST"] = "127.0.0.1:9"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", NOTEBOOK.name]
    passed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert passed.returncode == 0, passed.stdout[-3000:]
    edited = (
        (tmp_path / NOTEBOOK.name).read_text().replace("Answer in one sentence.", "Answer in two sentences.")
    )
    (tmp_path / NOTEBOOK.name).write_text(edited)
    failed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert failed.returncode != 0
    assert (
        "message 1 (user) differs: recorded «What is a Jupyter kernel? Answer in one sentence.»"
        in failed.stdout
    )
