"""The lab extension's REST API through pytest-jupyter's real Jupyter server: the server config that
loads nbagent's server extension and a blocking GET. Test modules import both fixtures by name."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

API = ("nbagent", "api", "sessions")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}}}


@pytest.fixture
def get(jp_fetch: Any, jp_asyncio_loop: Any) -> Any:
    """A blocking GET against the test server: ``get(*path, **params)`` -> (status, body), the body
    decoded as JSON when the server says it is JSON, else text."""

    def fetch(*parts: str, headers: dict[str, str] | None = None, **params: Any) -> tuple[int, Any]:
        # The server runs on the fixture's loop; an async test before this one may have left the
        # thread without a current loop, which tornado's client looks up.
        asyncio.set_event_loop(jp_asyncio_loop)
        try:
            r = jp_asyncio_loop.run_until_complete(
                jp_fetch(*parts, params={k: str(v) for k, v in params.items()}, headers=headers)
            )
        except HTTPClientError as exc:
            assert exc.response is not None
            return exc.code, json.loads(exc.response.body or b"{}")
        body = r.body.decode()
        kind = r.headers.get("Content-Type", "")
        return r.code, (json.loads(body) if body and "json" in kind else body)

    return fetch
