"""Fixtures shared by the test suite (helpers to import live in ``eventtrace.py`` and
``provider_servers.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from provider_servers import ProviderServer

PROVIDER_ENV = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "OLLAMA_API_KEY", "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "NBAGENT_BASE_URL", "NBAGENT_API_KEY",
)  # fmt: skip
"""Variables the providers read: none may leak in from the machine running the tests."""


@pytest.fixture
def db(tmp_path):
    """A fresh session file path beside a pretend notebook."""
    return tmp_path / "session.nbagent.sqlite"


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """A local HTTP server on 127.0.0.1 speaking both providers' streaming protocols."""
    with ProviderServer() as srv:
        yield srv


@pytest.fixture
def provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider variable from the machine; dummy keys for both providers (no request leaves
    127.0.0.1, so no real key is ever needed)."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy")
