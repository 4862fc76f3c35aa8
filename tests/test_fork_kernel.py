"""``%agent fork``, ``%agent replay`` and ``%agent diff`` in a real kernel (SPEC §11.4)."""

from __future__ import annotations

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
        assert "step 1" in diff and "= user" in diff and "(answer changed)" not in diff
        events = read_events(tmp_path / "work.nbagent.sqlite", child)
        assert [e.type for e in events].count("session/forked") == 1
        assert events[-1].type == "turn/end" and events[-1].data["turn"] == 2
