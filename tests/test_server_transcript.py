"""``nbagent transcript FILE [--session ID] [--format md|html]``: the export the sessions panel
offers, as a command. Real session files, a real subprocess; the file is read, never changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lab_sessions import XSS, write_session


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbagent", "transcript", *args], cwd=cwd, capture_output=True, text=True
    )


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_markdown_marks_typed_prompts_and_injected_context_apart(tmp_path: Path) -> None:
    path = tmp_path / "analysis.nbagent.sqlite"
    sid = write_session(path, ["Which city is warmest?"], context="Prices are in EUR.")
    before = files(tmp_path)
    done = run("analysis.nbagent.sqlite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "# Which city is warmest?\n\n"
        f"*analysis.nbagent.sqlite · session {sid} · model echo*\n\n"
        "## Turn 1\n\n"
        "### Step 1 · ≈11 tokens in\n\n"
        "📎 **cell** notes · 18 B\n\n"
        "```\nPrices are in EUR.\n```\n\n"
        "**You** · followup\n\n"
        "> Which city is warmest?\n\n"
        "**Assistant** · echo\n\n"
        "echo: I received 2 messages.\\\n"  # the model's lines stay lines (hard breaks)
        "1\\. user · cell · Prices are in EUR.\\\n"  # and its text makes no list
        "2\\. user · user · Which city is warmest?\n\n"
        "*Turn 1: completed*\n\n"
        "## Totals\n\n"
        "1 request · ≈11 tokens sent · no usage (offline model) · cost none · last "
        "request ≈11 tokens\n"
    )
    assert files(tmp_path) == before  # read-only: same bytes, no -wal or -shm


def test_a_session_is_chosen_by_id_or_prefix_else_the_most_recent(tmp_path: Path) -> None:
    path = tmp_path / "nb.nbagent.sqlite"
    first = write_session(path, ["First session"])
    second = write_session(path, ["Second session"])
    assert run(path.name, cwd=tmp_path).stdout.startswith("# Second session\n")
    assert run(path.name, "--session", first, cwd=tmp_path).stdout.startswith("# First session\n")
    assert run(path.name, "--session", second[:8], cwd=tmp_path).stdout.startswith("# Second session\n")
    short = run(path.name, "--session", first[:3], cwd=tmp_path)
    assert short.returncode == 1
    assert f"session id {first[:3]!r} is too short: a prefix needs at least 4 characters" in short.stderr


def test_html_is_a_standalone_page_where_content_stays_text(tmp_path: Path) -> None:
    write_session(tmp_path / "x.nbagent.sqlite", [f"Look: {XSS}"], context=XSS)
    page = run("x.nbagent.sqlite", "--format", "html", cwd=tmp_path).stdout
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<title>Look: &lt;img src=x" in page
    assert "<img" not in page and "<script>window" not in page and "</dataframe>" not in page
    assert "&lt;/dataframe&gt;" in page


def test_bad_input_is_named_with_its_cause_and_left_unchanged(tmp_path: Path) -> None:
    (tmp_path / "notes.nbagent.sqlite").write_text("not a database\n")
    write_session(tmp_path / "s.nbagent.sqlite", ["hello"])
    before = files(tmp_path)
    for args, words in [
        (("missing.nbagent.sqlite",), "no session file at missing.nbagent.sqlite"),
        (("notes.nbagent.sqlite",), "is not an nbagent session file"),
        (("s.nbagent.sqlite", "--session", "feedbeef"), "no session feedbeef in s.nbagent.sqlite"),
    ]:
        done = run(*args, cwd=tmp_path)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith("nbagent transcript: ") and words in done.stderr, done.stderr
    assert run("s.nbagent.sqlite", "--format", "pdf", cwd=tmp_path).returncode == 2  # argparse: usage
    assert files(tmp_path) == before
