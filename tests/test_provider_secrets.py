"""API keys echoed by a provider's error body are never stored or shown (issue 17, item 4).

A real agent talks HTTP to the loopback provider servers; each error body echoes the configured key
(``Incorrect API key provided: …`` and the ``Authorization`` header). The key must be nowhere: not in
the SQLite file's bytes (its ``-wal`` included), the transcript, the run's error, or any log record.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from provider_servers import Error, ProviderServer, Stream, an_message_start

import nbagent
from nbagent.core.retry import RetryPolicy
from nbagent.models.anthropic import AnthropicModel
from nbagent.models.openai_compat import OpenAICompatModel
from nbagent.redaction import REDACTED, looks_secret_name, scrub
from nbagent.views.escape import escape_markdown
from nbagent.views.markdown import transcript

pytestmark = pytest.mark.usefixtures("provider_env")

SHAPED = "sk-live-0a1b2c3d4e5f6a7b8c9d0e1f"
"""A key of the well-known ``sk-…`` shape."""
PLAIN = "k3y.9f8e7d6c5b4a39281706"
"""A key of no known shape: only knowing the configured value can catch it."""


def echo_body(provider: str, key: str) -> dict[str, Any]:
    """What a provider answers a bad key with, echoing it (as OpenAI's 401 does, unmasked here)."""
    message = f"Incorrect API key provided: {key}. You sent Authorization: Bearer {key}"
    if provider == "anthropic":
        return {"type": "error", "error": {"type": "authentication_error", "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}}


def model_for(provider: str, server: ProviderServer, key: str, how: str, monkeypatch: Any) -> Any:
    """The provider's model with ``key`` configured ``how``: in its environment variable, or passed."""
    passed = key if how == "passed" else None
    if how == "env":
        monkeypatch.setenv("ANTHROPIC_API_KEY" if provider == "anthropic" else "NBAGENT_API_KEY", key)
    if provider == "anthropic":
        return AnthropicModel("claude-test", base_url=server.url, api_key=passed)
    return OpenAICompatModel("m", provider="openai-compatible", base_url=f"{server.url}/v1", api_key=passed)


def stored_bytes(db: Path) -> bytes:
    """The session file and its write-ahead log as they are on disk now."""
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


@pytest.mark.parametrize("how", ["env", "passed"])
@pytest.mark.parametrize("key", [SHAPED, PLAIN], ids=["sk-shaped", "no-shape"])
@pytest.mark.parametrize("status", [401, 400, 500])
@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
async def test_a_key_echoed_by_an_error_body_is_nowhere_stored_or_shown(
    server, db, caplog, monkeypatch, provider, status, key, how
):
    caplog.set_level(logging.DEBUG)
    server.reply(*[Error(status, echo_body(provider, key))] * 2)  # a 500 is retried once
    model = model_for(provider, server, key, how, monkeypatch)
    agent = nbagent.open_session(db, model=model, retry=RetryPolicy(max_retries=1, base_delay_ms=1))
    run = await agent.run("hi")
    on_disk_while_open = stored_bytes(db)
    shown = transcript(agent.events)
    await agent.close()

    sent = server.requests[0].headers
    assert sent.get("authorization") == f"Bearer {key}" or sent.get("x-api-key") == key
    assert run.outcome == "error"
    error = run.end["reason"]["error"]
    assert error["status"] == status
    assert error["message"].endswith(
        f"HTTP {status}: Incorrect API key provided: {REDACTED}. You sent Authorization: Bearer {REDACTED}"
    )
    retried = [e for e in agent.events if e.type == "llm/retry"]
    assert len(retried) == (1 if status == 500 else 0)
    needle = key.encode()
    assert needle not in on_disk_while_open
    assert needle not in stored_bytes(db)
    assert key not in shown and escape_markdown(REDACTED) in shown  # the transcript escapes data (\[…\])
    assert key not in repr(run)
    assert all(key not in r.getMessage() for r in caplog.records)
    assert key not in caplog.text


async def test_a_key_echoed_inside_a_stream_error_event_is_scrubbed(server, db, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    error = ("error", {"type": "error", "error": {"type": "api_error", "message": f"bad key {PLAIN}"}})
    server.reply(Stream([an_message_start(), error]))
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLAIN)
    agent = nbagent.open_session(
        db, model=AnthropicModel("claude-test", base_url=server.url), retry=RetryPolicy(max_retries=0)
    )
    run = await agent.run("hi")
    await agent.close()
    assert run.end["reason"]["error"]["message"].endswith(f"bad key {REDACTED}")
    assert PLAIN.encode() not in stored_bytes(db)
    assert PLAIN not in caplog.text


async def test_a_model_that_raises_with_a_key_in_its_message_records_it_scrubbed(db):
    class Leaky:
        name = "leaky"

        async def stream(self, request: Any, signal: Any) -> Any:
            raise RuntimeError(f"auth failed for Authorization: Bearer {SHAPED}")
            yield  # pragma: no cover - makes this an async generator

    agent = nbagent.open_session(db, model=Leaky(), retry=RetryPolicy(max_retries=0))
    run = await agent.run("hi")
    await agent.close()
    assert (
        run.end["reason"]["error"]["message"]
        == f"RuntimeError: auth failed for Authorization: Bearer {REDACTED}"
    )
    assert SHAPED.encode() not in stored_bytes(db)


def test_scrub_removes_known_values_token_shapes_url_passwords_and_secret_assignments(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok.abcdef123456")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock")
    text = (
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt and Bearer eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl "
        "ghp_0123456789abcdefghijABCDEFGHIJ0123 AKIAABCDEFGHIJKLMNOP AIzaSyA-0123456789abcdefghijklmnopqrstu "
        "hf_abcdefghijklmnopqrstuvwxyz012345 postgresql://alice:pw%40x@db/s "
        '{"api_key": "abcd1234"} password=hunter22 passed tok.abcdef123456 explicit-secret-value '
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- /tmp/ssh-agent.sock keyboard=qwerty"
    )
    assert scrub(text, ["explicit-secret-value", None, "short"]) == (
        "[redacted] and Bearer [redacted] [redacted] [redacted] [redacted] [redacted] "
        'postgresql://alice:[redacted]@db/s {"api_key": "[redacted]"} password=[redacted] passed [redacted] '
        "[redacted] [redacted] /tmp/ssh-agent.sock keyboard=qwerty"
    )


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("OPENAI_API_KEY", True),
        ("dbPassword", True),
        ("PGPASSWORD", True),
        ("credentials", True),
        ("client_secret", True),
        ("HF_TOKEN", True),
        ("passwd", True),
        ("keyboard", False),
        ("monkey", False),
        ("tokens", False),
        ("tokenizer", False),
        ("max_tokens", False),
        ("SSH_AUTH_SOCK", False),
    ],
)
def test_secret_looking_names(name, secret):
    assert looks_secret_name(name) is secret
