"""A listing page reads its sessions' labels (first prompt, a fork's lineage) through one reader
per file or database, and the server remembers them: a panel re-listing an open database every
few seconds costs one query, not two reads per entry. A prompt not written yet, and a fork that
gained events, are read again; a crafted record costs only its own row's label."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from lab_sessions import write_session

import nbagent
from nbagent.labserver import labels as labels_module
from nbagent.labserver.labels import Labels
from nbagent.labserver.listing import listing_page
from nbagent.labserver.sessions import Readable
from nbagent.models import ScriptedModel
from nbagent.store.budget import Budget
from nbagent.store.location import PostgresLocation, parse_location

pytestmark = pytest.mark.stores


def _readable(db: Any) -> Readable:
    location = parse_location(db)
    return location if isinstance(location, PostgresLocation) else location.path


def _list(db: Any, labels: Labels, **kw: Any) -> dict[str, dict[str, Any]]:
    page = listing_page([(_readable(db), "api-name")], Budget, labels=labels, **kw)
    return {e["id"]: e for e in page.entries if "id" in e}


def _in_thread(coro_fn: Any) -> Any:
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro_fn()).result()


def _fork_and_run(db: Any, parent: str, prompt: str) -> str:
    async def go() -> str:
        child = nbagent.fork_session(
            db, parent, before_turn=1, model=ScriptedModel(["forked answer", "more"])
        )
        await child.run(prompt)
        sid = child.session_id
        await child.close()
        return sid

    return _in_thread(go)


def _run_again(db: Any, sid: str, prompt: str) -> None:
    async def go() -> None:
        agent = nbagent.resume_session(db, sid, model="echo")
        await agent.run(prompt)
        await agent.close()

    _in_thread(go)


def test_a_page_reads_its_labels_through_one_reader_and_a_second_listing_reads_none(
    db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write_session(db, ["Where do sales come from?"])
    second = write_session(db, ["And returns?"])
    titled = write_session(db, ["never read"], title="Quarterly")
    fork = _fork_and_run(db, first, "By region?")
    opened: list[object] = []
    real = labels_module.open_reader
    monkeypatch.setattr(labels_module, "open_reader", lambda where: opened.append(where) or real(where))
    labels = Labels()

    rows = _list(db, labels)
    assert len(opened) == 1 and labels.reads == 3  # the titled session's prompt is never read
    assert rows[first]["label"] == "Where do sales come from?" and rows[second]["label"] == "And returns?"
    assert (rows[titled]["label"], rows[titled]["first_prompt"]) == ("Quarterly", "")
    assert rows[fork]["parent"] == first and rows[fork]["first_prompt"] == "Where do sales come from?"

    again = _list(db, labels)
    assert again == rows and len(opened) == 1 and labels.reads == 3
    assert _list(db, Labels()) == rows and len(opened) == 2  # a fresh server reads them again


def test_a_session_without_a_prompt_yet_is_read_again_until_it_has_one(db: Any) -> None:
    sid = write_session(db, [], context="the table has 3 columns")
    labels = Labels()
    assert _list(db, labels)[sid]["label"] == "(no prompt yet)"  # the injected context is no prompt
    assert _list(db, labels)[sid]["label"] == "(no prompt yet)" and labels.reads == 2
    _run_again(db, sid, "Which column is the date?")
    assert _list(db, labels)[sid]["label"] == "Which column is the date?" and labels.reads == 3
    assert _list(db, labels)[sid]["label"] == "Which column is the date?" and labels.reads == 3


def test_a_fork_that_gained_events_has_its_lineage_read_again(db: Any) -> None:
    parent = write_session(db, ["Where do sales come from?"])
    fork = _fork_and_run(db, parent, "By region?")
    labels = Labels()
    before = _list(db, labels)[fork]
    assert labels.reads == 2  # the parent's prompt, the fork's prompt and lineage
    _list(db, labels)
    assert labels.reads == 2
    _run_again(db, fork, "And by month?")
    after = _list(db, labels)[fork]
    assert labels.reads == 3 and after["events"] > before["events"]  # only the fork, read once more
    assert (after["label"], after["purpose"]) == (before["label"], before["purpose"])


def test_the_labels_remembered_are_bounded(db: Any) -> None:
    ids = [write_session(db, [f"question {i}"]) for i in range(4)]
    labels = Labels(size=2)
    rows = _list(db, labels)
    assert len(labels) == 2 and [rows[i]["label"] for i in ids] == [f"question {i}" for i in range(4)]
    _list(db, labels)
    assert labels.reads == 4 + 2  # the two least recently listed were forgotten, and read again


@pytest.mark.sqlite_only
def test_a_crafted_fork_record_costs_only_its_own_label(tmp_path: Path) -> None:
    path = tmp_path / "crafted.nbagent.sqlite"
    parent = write_session(path, ["Where do sales come from?"])
    fork = _fork_and_run(path, parent, "By region?")
    with sqlite3.connect(path) as conn:  # a session/forked record without the fields it needs
        changed = conn.execute(
            "UPDATE events SET data = '{}' WHERE session_id = ? AND type = 'session/forked'", (fork,)
        ).rowcount
    conn.close()
    assert changed == 1
    rows = _list(path, Labels())
    assert rows[parent]["label"] == "Where do sales come from?"
    assert rows[fork]["parent"] == parent and rows[fork]["purpose"] is None


def test_a_page_over_its_budget_lists_every_row_without_the_labels_it_could_not_read(db: Any) -> None:
    ids = [write_session(db, [f"question {i}"]) for i in range(3)]
    rows = _list(db, Labels())
    starved = listing_page(
        [(_readable(db), "api-name")], lambda: Budget(max_bytes=1), labels=Labels()
    ).entries
    if isinstance(_readable(db), Path):  # (the byte budget bounds SQLite reads; a database has its own)
        assert {e["id"] for e in starved} == set(ids) and {e["label"] for e in starved} == {"(no prompt yet)"}
    else:
        assert {e["id"]: e["label"] for e in starved} == {i: rows[i]["label"] for i in ids}
