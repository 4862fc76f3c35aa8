"""What the session tab reads from the REST API: lineage in the listing, and a long session's
newest turns without folding its whole log (windows of turns, earlier pages on demand)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

from lab_sessions import write_family
from pytest_jupyter.jupyter_server import *  # noqa: F403
from tornado.httpclient import HTTPClientError

API = ("nbagent", "api", "sessions")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}}}


@pytest.fixture
def get(jp_fetch: Any, jp_asyncio_loop: Any) -> Any:
    """A blocking GET against the test server: ``get(*path, **params)`` -> (status, JSON body)."""

    def fetch(*parts: str, **params: Any) -> tuple[int, Any]:
        asyncio.set_event_loop(jp_asyncio_loop)
        try:
            r = jp_asyncio_loop.run_until_complete(
                jp_fetch(*parts, params={k: str(v) for k, v in params.items()})
            )
        except HTTPClientError as exc:
            assert exc.response is not None
            return exc.code, json.loads(exc.response.body or b"{}")
        return r.code, (json.loads(r.body) if r.body else None)

    return fetch


def test_the_listing_names_the_parent_of_a_fork(jp_root_dir: Path, get: Any) -> None:
    parent, child = write_family(jp_root_dir / "what-if.nbagent.sqlite")
    status, rows = get(*API, path="")
    assert status == 200
    assert {r["id"]: r["parent"] for r in rows} == {parent: None, child: parent}
