"""``nbagent sessions prune``: old forks go, children first; a user's session, a fork in use and
the parent of a kept fork stay (both stores)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import nbagent
from nbagent.models import ScriptedModel
from nbagent.store.pruning import prune_sessions

pytestmark = pytest.mark.stores


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbagent", *args], capture_output=True, text=True, timeout=120
    )


async def _family(db) -> dict[str, str]:
    root = nbagent.open_session(db, model=ScriptedModel(["one", "two"]))
    await root.run("first")
    await root.run("second")
    child = root.fork(before_turn=2, model=ScriptedModel(["again"]))
    await child.run("replayed")
    grandchild = child.fork(at=len(child.events) - 1)
    other = root.fork(before_turn=2)
    ids = {"root": root.session_id, "child": child.session_id}
    ids |= {"grandchild": grandchild.session_id, "other": other.session_id}
    for agent in (root, child, grandchild):
        await agent.close()
    ids["open"] = other  # type: ignore[assignment]  # still open: its lease is held
    return ids


async def test_prune_deletes_idle_forks_children_first_and_keeps_roots_and_forks_in_use(db):
    ids = await _family(db)
    other = ids.pop("open")
    planned = prune_sessions(db, older_than_days=0, dry_run=True)
    assert {r.session_id: r.outcome for r in planned} == {
        ids["grandchild"]: "would delete",
        ids["child"]: "would delete",
        ids["other"]: "would delete",
    }
    assert [r.session_id for r in planned].index(ids["grandchild"]) < [r.session_id for r in planned].index(
        ids["child"]
    )
    assert len(nbagent.list_sessions(db)) == 4  # a dry run deletes nothing
    done = {r.session_id: r.outcome for r in prune_sessions(db, older_than_days=0)}
    assert done == {ids["grandchild"]: "deleted", ids["child"]: "deleted", ids["other"]: "in use"}
    assert {s.id for s in nbagent.list_sessions(db)} == {ids["root"], ids["other"]}
    assert nbagent.read_events(db, ids["root"])  # the user's session is whole
    other.inject("still writable")
    await other.close()
    assert prune_sessions(db, older_than_days=365) == []  # nothing is that old


async def test_the_prune_and_list_commands(db):
    ids = await _family(db)
    other = ids.pop("open")
    await other.close()
    dry = cli("sessions", "prune", str(db), "--older-than", "0", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("would delete") == 4 and "nbagent: would delete 3 sessions" in dry.stdout
    listed = cli("sessions", "list", str(db), "--notebook", "*.ipynb")
    assert listed.returncode == 0 and "no sessions" in listed.stdout  # none was opened from a notebook
    real = cli("sessions", "prune", str(db), "--older-than", "0", "--attribution")
    assert real.returncode == 0 and "deleted 0 sessions" in real.stdout  # none is an attribution run
    real = cli("sessions", "prune", str(db), "--older-than", "0")
    assert real.returncode == 0 and "deleted 3 sessions" in real.stdout, real.stdout
    assert [s.id for s in nbagent.list_sessions(db)] == [ids["root"]]


async def test_an_attribution_run_is_told_from_a_fork_by_its_forked_record(db):
    """``kind`` comes from the fork's ``session/forked`` record (read through ``parse_event``)."""
    root = nbagent.open_session(db, model=ScriptedModel(["one", "two"]))
    await root.run("first")
    await root.run("second")
    run = root.fork(before_turn=2, purpose="attribution")
    plain = root.fork(before_turn=2)
    for agent in (root, run, plain):
        await agent.close()
    kinds = {r.session_id: r.kind for r in prune_sessions(db, older_than_days=0, dry_run=True)}
    assert kinds == {run.session_id: "attribution", plain.session_id: "fork"}
    only = prune_sessions(db, older_than_days=0, attribution_only=True)
    assert [(r.session_id, r.outcome) for r in only] == [(run.session_id, "deleted")]
