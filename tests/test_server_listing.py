"""The session listing of the lab panel is bounded (issue 32, item 5): it comes in pages (a ``Link``
header names the next), each text field and so each answer is bounded, the files left when its time
is up are listed as not read, only the page's sessions are read beyond their metadata, and a slow
listing holds up no other request."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

from lab_sessions import write_session
from pytest_jupyter.jupyter_server import *  # noqa: F403
from tornado.httpclient import HTTPClientError

from nbagent.labserver import labels, listing
from nbagent.store.sqlite.store import SessionFile

API = ("nbagent", "api", "sessions")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}}}


async def _fetch(jp_fetch: Any, parts: tuple[str, ...], params: dict[str, Any]) -> tuple[int, Any, Any]:
    try:
        r = await jp_fetch(*parts, params={k: str(v) for k, v in params.items()})
    except HTTPClientError as exc:
        assert exc.response is not None
        return exc.code, exc.response.headers, json.loads(exc.response.body or b"{}")
    return r.code, r.headers, json.loads(r.body) if r.body and "json" in r.headers["Content-Type"] else r.body


@pytest.fixture
def get(jp_fetch: Any, jp_asyncio_loop: Any) -> Any:
    def run(*parts: str, **params: Any) -> tuple[int, Any, Any]:
        asyncio.set_event_loop(jp_asyncio_loop)
        return jp_asyncio_loop.run_until_complete(_fetch(jp_fetch, parts, params))

    return run


def sessions_without_events(path: Path, count: int, *, title: str | None = None) -> list[str]:
    """``count`` sessions (metadata rows only), one a millisecond apart, newest last, the newest a
    millisecond before now (so a session written after them is newer however fast they were written)."""
    now = int(time.time() * 1000) - count
    ids = [uuid.uuid4().hex for _ in range(count)]
    file = SessionFile(path)
    try:
        for i, sid in enumerate(ids):
            file.write([], session=(sid, now + i, title, None, None, "echo", "{}"))
    finally:
        file.close()
    return ids


def _next(headers: Any) -> dict[str, str] | None:
    link = headers.get("Link")
    if link is None:
        return None
    url = link.split(">")[0].lstrip("<")
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def test_the_listing_comes_in_pages_that_together_are_the_whole_listing(jp_root_dir: Path, get: Any) -> None:
    a = sessions_without_events(jp_root_dir / "a.nbagent.sqlite", 4, title="a")
    b = sessions_without_events(jp_root_dir / "b.nbagent.sqlite", 3, title="b")
    (jp_root_dir / "empty.nbagent.sqlite").write_bytes(b"")
    status, headers, whole = get(*API, path="", limit=1000)
    assert status == 200 and _next(headers) is None and headers["X-Nbagent-Total"] == "8"
    assert [r.get("id") for r in whole[:7]] == [*reversed(b), *reversed(a)] or len(whole) == 8
    assert "error" in whole[-1] and whole[-1]["file"] == "empty.nbagent.sqlite"
    pages, params = [], {"path": "", "limit": 3}
    while params is not None:
        status, headers, rows = get(*API, **params)
        assert status == 200 and len(rows) <= 3
        pages.append(rows)
        params = _next(headers)
    assert len(pages) == 3 and [r for p in pages for r in p] == whole
    status, headers, rows = get(*API, file="a.nbagent.sqlite", limit=2)
    assert [r["id"] for r in rows] == list(reversed(a))[:2] and _next(headers) == {
        "file": "a.nbagent.sqlite",
        "offset": "2",
        "limit": "2",
    }
    assert get(*API, path="")[1].get("Link") is None  # 8 entries: one default page
    assert get(*API, path="", limit=0)[0] == 422 and get(*API, path="", limit=10_000)[0] == 422


def test_a_huge_title_is_cut_so_the_answer_stays_small(jp_root_dir: Path, get: Any) -> None:
    sessions_without_events(jp_root_dir / "t.nbagent.sqlite", 3, title="T" * (5 << 20))
    status, _, rows = get(*API, path="")
    assert status == 200 and len(rows) == 3
    assert all(len(r["title"]) == listing.FIELD_CHARS and r["title"].endswith("…") for r in rows)
    assert len(json.dumps(rows)) < 10_000


def test_only_the_pages_sessions_are_read_beyond_their_metadata(
    jp_root_dir: Path, get: Any, monkeypatch: Any
) -> None:
    sessions_without_events(jp_root_dir / "many.nbagent.sqlite", 300)
    write_session(jp_root_dir / "many.nbagent.sqlite", ["the newest prompt"])
    calls: list[int] = []
    real = labels.first_prompt
    monkeypatch.setattr(labels, "first_prompt", lambda events: calls.append(1) or real(events))
    status, headers, rows = get(*API, path="", limit=5)
    assert status == 200 and len(rows) == 5 and headers["X-Nbagent-Total"] == "301"
    assert rows[0]["label"] == "the newest prompt"
    assert len(calls) == 5
    # The server remembers a prompt once written; the four sessions without one are read again.
    assert get(*API, path="", limit=5)[2] == rows and len(calls) == 5 + 4


def test_files_not_reached_in_the_listings_time_are_listed_as_not_read(
    jp_root_dir: Path, get: Any, monkeypatch: Any
) -> None:
    for name in ("a", "b"):
        sessions_without_events(jp_root_dir / f"{name}.nbagent.sqlite", 1, title=name)
    monkeypatch.setattr(listing, "LISTING_SECONDS", -1.0)
    status, _, rows = get(*API, path="")
    assert status == 200 and [r["file"] for r in rows] == ["a.nbagent.sqlite", "b.nbagent.sqlite"]
    assert all("was not read: listing this folder took longer than" in r["error"] for r in rows)


def test_slow_listings_hold_up_no_other_request(
    jp_root_dir: Path, jp_fetch: Any, jp_asyncio_loop: Any, monkeypatch: Any
) -> None:
    """Two slow listings used to take both reader threads: every nbagent request waited for them."""
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["hello"])
    entered, release = threading.Semaphore(0), threading.Event()
    real = listing.list_sessions

    def slow_list_sessions(path: Any) -> Any:
        entered.release()
        assert release.wait(120)
        return real(path)

    monkeypatch.setattr(listing, "list_sessions", slow_list_sessions)

    async def scenario() -> None:
        slow = [asyncio.ensure_future(_fetch(jp_fetch, API, {"path": ""})) for _ in range(2)]
        loop = asyncio.get_running_loop()
        for _ in range(2):
            assert await loop.run_in_executor(None, entered.acquire, True, 120)
        try:
            for what in ("events", "timeline", "transcript"):
                status, _, _ = await asyncio.wait_for(
                    _fetch(jp_fetch, (*API, sid, what), {"file": "s.nbagent.sqlite"}), 120
                )
                assert status == 200, what
            assert not any(s.done() for s in slow)
        finally:
            release.set()
        for s in slow:
            status, _, rows = await s
            assert status == 200 and rows[0]["id"] == sid

    asyncio.set_event_loop(jp_asyncio_loop)
    jp_asyncio_loop.run_until_complete(scenario())
