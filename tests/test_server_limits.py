"""The lab extension's REST API under hostile input, through a real Jupyter server: crafted
session files cost bounded work, parameters are validated, paths stay those of the contents
manager and are shown relative to its root, and a GET writes nothing."""

from __future__ import annotations

import asyncio
import functools
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

from filestate import crashed_copy
from lab_sessions import write_session
from pytest_jupyter.jupyter_server import *  # noqa: F403
from tornado.httpclient import HTTPClientError

import nbagent
from nbagent.labserver import handlers
from nbagent.store import budget

API = ("nbagent", "api", "sessions")


@pytest.fixture
def jp_server_config(request: pytest.FixtureRequest, jp_root_dir: Path) -> dict[str, Any]:
    config: dict[str, Any] = {"ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}}}
    inner = getattr(request, "param", None)
    if inner:  # the contents manager serves a folder below the server's root
        (jp_root_dir / inner).mkdir()
        config["FileContentsManager"] = {"root_dir": str(jp_root_dir / inner)}
    return config


async def _fetch(jp_fetch: Any, parts: tuple[str, ...], params: dict[str, Any]) -> tuple[int, Any]:
    try:
        r = await jp_fetch(*parts, params={k: str(v) for k, v in params.items()})
    except HTTPClientError as exc:
        assert exc.response is not None
        return exc.code, _body(exc.response.body)
    body = r.body.decode()
    kind = r.headers.get("Content-Type", "")
    return r.code, (json.loads(body) if body and "json" in kind else body)


def _body(raw: bytes | None) -> Any:
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        return {"message": (raw or b"").decode(errors="replace")}


@pytest.fixture
def get(jp_fetch: Any, jp_asyncio_loop: Any) -> Any:
    """A blocking GET against the test server: ``get(*path, **params)`` -> (status, body)."""

    def fetch(*parts: str, **params: Any) -> tuple[int, Any]:
        asyncio.set_event_loop(jp_asyncio_loop)
        return jp_asyncio_loop.run_until_complete(_fetch(jp_fetch, parts, params))

    return fetch


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_out_of_range_parameters_are_422_with_a_message(jp_root_dir: Path, get: Any) -> None:
    """``after=9223372036854775807`` used to be a 500 (an integer SQLite cannot bind)."""
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["hello"])
    for what, params in [
        ("events", {"after": 9223372036854775807}),
        ("events", {"after": 10**30}),
        ("events", {"after": -2}),
        ("timeline", {"known": 10**30}),
        ("timeline", {"turn": 0}),
    ]:
        status, body = get(*API, sid, what, file="s.nbagent.sqlite", **params)
        name = next(iter(params))
        assert status == 422, (what, params, status, body)
        assert body["message"].startswith(f"{name} must be between"), body
    assert get(*API, sid, "events", file="s.nbagent.sqlite", after=9223372036854775806) == (200, [])


def test_errors_name_paths_relative_to_the_root(jp_root_dir: Path, get: Any) -> None:
    """Error bodies (and the listing's error rows the panel shows) used to hold absolute paths."""
    (jp_root_dir / "sub").mkdir()
    (jp_root_dir / "sub" / "text.nbagent.sqlite").write_text("just some text, not SQLite\n")
    status, body = get(*API, "some-id", "events", file="sub/text.nbagent.sqlite")
    assert status == 422 and "sub/text.nbagent.sqlite is not an nbagent session file" in body["message"]
    sid = write_session(jp_root_dir / "sub" / "s.nbagent.sqlite", ["hello"])
    status, body = get(*API, "nope", "timeline", file="sub/s.nbagent.sqlite")
    assert status == 404 and "no session nope in sub/s.nbagent.sqlite" in body["message"]
    status, rows = get(*API, path="sub")
    assert status == 200 and {r["id"] for r in rows if "id" in r} == {sid}
    (error,) = [r["error"] for r in rows if "error" in r]
    assert error.startswith("sub/text.nbagent.sqlite is not")
    assert error.endswith("nbagent left it unchanged")  # no advice for code (a path, NBAGENT_DB)
    for text in (body["message"], error):
        assert str(jp_root_dir) not in text and str(jp_root_dir.resolve()) not in text


@pytest.mark.parametrize("jp_server_config", ["inner"], indirect=True)
def test_paths_are_the_contents_managers_not_the_servers(jp_root_dir: Path, get: Any) -> None:
    """With the contents root below the server root, ``path=outside`` used to list a folder that
    ``/api/contents/outside`` does not serve."""
    (jp_root_dir / "outside").mkdir()
    hidden = write_session(jp_root_dir / "outside" / "x.nbagent.sqlite", ["not served"])
    mine = write_session(jp_root_dir / "inner" / "s.nbagent.sqlite", ["served"])

    assert get("api", "contents", "outside")[0] == 404  # what Jupyter itself serves
    assert get(*API, path="outside")[0] == 404
    assert get(*API, hidden, "events", file="outside/x.nbagent.sqlite")[0] == 404
    assert get(*API, path="../outside")[0] == 403
    assert get(*API, hidden, "events", file="../outside/x.nbagent.sqlite")[0] == 403
    status, rows = get(*API, path="")
    assert status == 200 and [(r["file"], r["id"]) for r in rows] == [("s.nbagent.sqlite", mine)]
    assert get(*API, mine, "events", file="s.nbagent.sqlite")[0] == 200


def test_a_get_on_a_log_whose_writer_crashed_creates_nothing(
    jp_root_dir: Path, tmp_path: Path, get: Any
) -> None:
    """A -wal without -shm (a crashed writer's) used to get a new -shm from the first GET."""
    import os

    path = crashed_copy(jp_root_dir / "s.nbagent.sqlite", tmp_path / "live")
    os.unlink(f"{path}-shm")
    before = files(jp_root_dir)
    status, rows = get(*API, path="")
    assert status == 200 and rows[0]["turns"] == 2
    sid = rows[0]["id"]
    for what in ("events", "timeline", "transcript"):
        assert get(*API, sid, what, file="s.nbagent.sqlite")[0] == 200, what
    assert len(get(*API, sid, "events", file="s.nbagent.sqlite")[1]) == rows[0]["events"]
    assert files(jp_root_dir) == before


def _one_record(path: Path, sid: str, data: str) -> int:
    """Replace the data of the session's first assistant message with ``data``; its seq."""
    conn = sqlite3.connect(path)
    (seq,) = conn.execute(
        "SELECT min(seq) FROM events WHERE session_id = ? AND type = 'assistant/message'", (sid,)
    ).fetchone()
    conn.execute("UPDATE events SET data = ? WHERE session_id = ? AND seq = ?", (data, sid, seq))
    conn.commit()
    conn.close()
    return seq


def test_a_record_nested_1000_levels_deep_is_a_422_naming_it(jp_root_dir: Path, get: Any) -> None:
    """Such a record used to be a 500 (RecursionError) from every read endpoint."""
    path = jp_root_dir / "s.nbagent.sqlite"
    sid = write_session(path, ["hello"])
    seq = _one_record(path, sid, '{"x": ' + "[" * 1000 + "]" * 1000 + "}")
    for what in ("events", "timeline", "transcript"):
        status, body = get(*API, sid, what, file="s.nbagent.sqlite")
        assert status == 422, (what, status, body)
        assert f"seq {seq}" in body["message"] and "nests deeper than" in body["message"], body


def test_a_record_larger_than_a_request_may_read_is_refused(jp_root_dir: Path, get: Any) -> None:
    """A 40 MB record used to be read whole and sent back (one 40 MB answer per GET)."""
    path = jp_root_dir / "s.nbagent.sqlite"
    sid = write_session(path, ["hello"])
    _one_record(path, sid, json.dumps({"x": "y" * (40 << 20)}))
    for what in ("events", "timeline", "transcript"):
        status, body = get(*API, sid, what, file="s.nbagent.sqlite")
        assert status == 422, (what, status)
        assert "larger than the 32 MB one request may read" in body["message"], body
    assert get(*API, sid, "events", file="s.nbagent.sqlite", after=seq_after(path, sid))[0] == 200


def seq_after(path: Path, sid: str) -> int:
    return max(ev.seq for ev in nbagent.read_events(path, sid) if ev.type == "assistant/message")


def test_sqlite_work_per_request_is_bounded(jp_root_dir: Path, get: Any, monkeypatch: Any) -> None:
    """A progress handler stops a request's SQLite work beyond its budget (a 422, not minutes of CPU)."""
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["hello"])
    monkeypatch.setattr(handlers, "Budget", functools.partial(budget.Budget, max_steps=1))
    monkeypatch.setattr(budget, "PROGRESS_EVERY", 1)
    for parts, params in [
        (API, {"file": "s.nbagent.sqlite"}),
        ((*API, sid, "events"), {"file": "s.nbagent.sqlite"}),
    ]:
        status, body = get(*parts, **params)
        assert status == 422 and "SQLite steps one request may use" in body["message"], body
    status, rows = get(*API, path="")
    assert status == 200 and "SQLite steps" in rows[0]["error"]


def test_events_pages_and_timeline_folds_are_bounded_per_request(
    jp_root_dir: Path, get: Any, monkeypatch: Any
) -> None:
    """One GET used to read and fold the whole log, however long; now each request does a page
    and the next continues where it stopped."""
    path = jp_root_dir / "s.nbagent.sqlite"
    sid = write_session(path, [f"question {i}" for i in range(8)])
    total = len(nbagent.read_events(path, sid))
    monkeypatch.setattr(handlers, "FOLD_EVENTS", 10)
    monkeypatch.setattr(handlers, "PAGE_BYTES", 2_000)

    seen: list[int] = []
    after = -1
    while True:
        status, page = get(*API, sid, "events", file="s.nbagent.sqlite", after=after)
        assert status == 200
        if not page:
            break
        compact = sum(
            len(json.dumps(ev["data"], separators=(",", ":"), ensure_ascii=False)) for ev in page[:-1]
        )
        assert compact < 2_000  # stopped at the byte cap
        seen += [ev["seq"] for ev in page]
        after = page[-1]["seq"]
    assert seen == list(range(total)) and len(seen) > 10

    folded: list[int] = []
    known: int | None = None
    while True:
        status, bundle = get(
            *API, sid, "timeline", file="s.nbagent.sqlite", **({} if known is None else {"known": known})
        )
        if status == 204:
            break
        assert status == 200
        folded.append(bundle["seq"])
        known = bundle["seq"]
    assert folded == [min(total, 10 * (i + 1)) for i in range(len(folded))] and folded[-1] == total
    status, one = get(*API, sid, "timeline", file="s.nbagent.sqlite", turn=2)
    assert status == 200 and {n["id"] for n in one["nodes"] if n["type"] == "turn"} == {"turn-2"}


def test_the_server_answers_others_while_a_request_is_busy(
    jp_root_dir: Path, jp_fetch: Any, jp_asyncio_loop: Any, monkeypatch: Any
) -> None:
    """Answers used to be encoded on the server's event loop: a big one stalled every other request."""
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["hello"])
    entered, release = threading.Event(), threading.Event()
    real = handlers.event_json

    def slow_event_json(ev: Any) -> dict[str, Any]:
        entered.set()
        assert release.wait(60)
        return real(ev)

    monkeypatch.setattr(handlers, "event_json", slow_event_json)

    async def scenario() -> None:
        busy = asyncio.ensure_future(_fetch(jp_fetch, (*API, sid, "events"), {"file": "s.nbagent.sqlite"}))
        assert await asyncio.get_running_loop().run_in_executor(None, entered.wait, 60)
        try:
            status, _ = await asyncio.wait_for(_fetch(jp_fetch, ("api", "contents"), {}), 60)
            assert status == 200 and not busy.done()
        finally:
            release.set()
        status, events = await busy
        assert status == 200 and events[0]["seq"] == 0

    asyncio.set_event_loop(jp_asyncio_loop)
    jp_asyncio_loop.run_until_complete(scenario())


def test_a_folder_with_too_many_session_files_is_refused_not_read(
    jp_root_dir: Path, get: Any, monkeypatch: Any
) -> None:
    """Each file is read under a budget of its own, so a listing also bounds how many it reads."""
    for i in range(3):
        (jp_root_dir / f"f{i}.nbagent.sqlite").write_bytes(b"")
    monkeypatch.setattr(handlers, "MAX_FILES", 2)
    status, body = get(*API, path="")
    assert status == 422 and "holds 3 session files, more than the 2" in body["message"]
    monkeypatch.setattr(handlers, "MAX_FILES", 3)
    status, rows = get(*API, path="")
    assert status == 200 and sorted(r["file"] for r in rows) == [f"f{i}.nbagent.sqlite" for i in range(3)]
    assert all("is empty (0 bytes)" in r["error"] for r in rows)  # listed with the reason, not left out


def test_a_timeline_holds_a_bounded_fold_per_session(jp_root_dir: Path, get: Any, jp_serverapp: Any) -> None:
    """Folds are kept between polls; one session's fold used to grow with its log, without bound."""
    path = jp_root_dir / "s.nbagent.sqlite"
    sid = write_session(path, [f"question {i}" for i in range(3)])
    cache = jp_serverapp.web_app.settings["nbagent_timelines"]
    cache.max_bytes = 1_000
    status, body = get(*API, sid, "timeline", file="s.nbagent.sqlite")
    assert status == 422 and "more than the 1,000 bytes of records the server folds" in body["message"]
    cache.max_bytes = 1 << 20
    assert get(*API, sid, "timeline", file="s.nbagent.sqlite")[0] == 200
