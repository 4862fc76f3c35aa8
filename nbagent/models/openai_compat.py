"""OpenAI chat-completions models through the official ``openai`` SDK: OpenAI, Ollama, DeepSeek, vLLM…

Model strings (``nbagent.open_session(path, model=...)``, ``%agent model ...``), each with where
its base URL and key come from:

- ``openai:MODEL``: ``OPENAI_BASE_URL`` or https://api.openai.com/v1; ``OPENAI_API_KEY``.
- ``ollama:MODEL``: ``OLLAMA_HOST`` (``host:port`` is fine; ``http://`` and ``/v1`` are added) or
  http://localhost:11434/v1; no key needed (``OLLAMA_API_KEY`` if a proxy wants one).
- ``deepseek:MODEL``: ``DEEPSEEK_BASE_URL`` or https://api.deepseek.com; ``DEEPSEEK_API_KEY``.
- ``openai-compatible:MODEL`` (vLLM, LM Studio, llama.cpp, gateways): ``NBAGENT_BASE_URL``, or
  ``openai-compatible:MODEL@http://host:port/v1`` (the URL from the first ``@http://`` or
  ``@https://`` on); ``NBAGENT_API_KEY`` if the server wants one.

Constructor arguments override the environment. Base URLs are read when the model is created, keys
when a request is made (so a key exported later still works). Keys are never logged: the session
stores only ``model.name``, the model string (``"openai:gpt-4.1"``; with the ``@URL`` form, the URL
too, without a password or a secret-looking query value). The SDK's own retries are off (``max_retries=0``): the agent loop owns retries (SPEC §5.5).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from nbagent.errors import NbagentError
from nbagent.models._http_failures import missing_key_failure
from nbagent.models._openai_wire import OpenAIStreamState, openai_tools, to_openai_messages
from nbagent.models._sdk_support import (
    ClientCache,
    env,
    import_sdk,
    sdk_chunks,
    tool_schemas,
)
from nbagent.models.base import CancelSignalLike, Chunk, Finish, ModelRequest
from nbagent.redaction import scrub


@dataclass(frozen=True)
class Preset:
    """Where a provider prefix finds its endpoint and key, and its wire quirks."""

    key_env: str
    base_url_env: str
    default_base_url: str | None
    key_required: bool = True
    reasoning_field: str | None = None
    flatten_text: bool = False
    max_tokens_param: str = "max_tokens"


PRESETS: dict[str, Preset] = {
    "openai": Preset(
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "https://api.openai.com/v1",
        max_tokens_param="max_completion_tokens",
    ),
    "ollama": Preset("OLLAMA_API_KEY", "OLLAMA_HOST", "http://localhost:11434/v1", key_required=False),
    "deepseek": Preset(
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        "https://api.deepseek.com",
        reasoning_field="reasoning_content",
        flatten_text=True,
    ),
    "openai-compatible": Preset("NBAGENT_API_KEY", "NBAGENT_BASE_URL", None, key_required=False),
}


class OpenAICompatModel:
    """A chat-completions model streamed with ``AsyncOpenAI`` (SDK retries off; the loop retries).

    ``name`` is the full model string (``"ollama:qwen3"``), ``provider`` its prefix and ``model``
    the provider's model id. ``extra_body`` is merged into every request (e.g. ``{"think": True}``).
    """

    def __init__(
        self,
        model: str,
        *,
        provider: str = "openai",
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        include_usage: bool = True,
        preset: Preset | None = None,
        name: str | None = None,
    ) -> None:
        self.preset = preset or PRESETS.get(provider) or PRESETS["openai-compatible"]
        self.model = model
        self.provider = provider
        self.name = name or f"{provider}:{model}"
        base_url = (
            base_url or _normalize(provider, env(self.preset.base_url_env)) or self.preset.default_base_url
        )
        if base_url is None:
            raise NbagentError(
                f"model {scrub(self.name)!r} needs a base URL: set {self.preset.base_url_env} "
                f"(for example http://localhost:8000/v1), write '{provider}:{scrub(model)}@http://host:port/v1', "
                "or pass base_url=..."
            )
        self.base_url: str = base_url
        self._api_key = api_key
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})
        self.include_usage = include_usage
        self._clients = ClientCache(timeout)

    def __repr__(self) -> str:
        return f"OpenAICompatModel({self.name!r}, base_url={scrub(self.base_url)!r})"

    async def stream(self, request: ModelRequest, signal: CancelSignalLike) -> AsyncIterator[Chunk]:
        key = self._api_key or env(self.preset.key_env)
        if key is None and self.preset.key_required:
            yield Finish("error", missing_key_failure(self.name, self.preset.key_env))
            return

        async def open_stream() -> Any:
            client = self._client(key or "not-needed", await import_sdk("openai"))
            return await client.chat.completions.create(**self.request_body(request))

        stream = sdk_chunks(signal, open_stream, OpenAIStreamState(), self.name, secrets=(key,))
        async with aclosing(stream) as chunks:
            async for chunk in chunks:
                yield chunk

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(
                request.messages,
                request.system,
                reasoning_field=self.preset.reasoning_field,
                flatten_text=self.preset.flatten_text,
            ),
            "stream": True,
        }
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = openai_tools(tool_schemas(request.tools))
        if self.max_tokens is not None:
            body[self.preset.max_tokens_param] = self.max_tokens
        if self.extra_body:
            body["extra_body"] = dict(self.extra_body)
        return body

    def _client(self, key: str, sdk: ModuleType) -> Any:
        return self._clients.get(key, sdk, "AsyncOpenAI", self.base_url)

    async def aclose(self) -> None:
        """Close the SDK client's connections (optional; they also close with the process)."""
        await self._clients.aclose()


def _normalize(provider: str, url: str | None) -> str | None:
    """``OLLAMA_HOST`` is usually ``host:port`` without scheme or ``/v1``; make it a base URL."""
    if url is None or provider != "ollama":
        return url
    if "://" not in url:
        url = f"http://{url}"
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        url = url.rstrip("/") + "/v1"
    return url


def _split_url(spec: str) -> tuple[str, str | None]:
    """``MODEL@URL`` split where the URL starts (a password in the URL may hold an ``@`` too)."""
    at = re.search(r"@(?=https?://)", spec)
    if at is not None and at.start() > 0:
        return spec[: at.start()], spec[at.end() :]
    return spec, None


def openai_model(spec: str) -> OpenAICompatModel:
    """``openai:MODEL``."""
    return OpenAICompatModel(spec, provider="openai")


def ollama_model(spec: str) -> OpenAICompatModel:
    """``ollama:MODEL`` (a local Ollama's OpenAI-compatible endpoint)."""
    return OpenAICompatModel(spec, provider="ollama")


def deepseek_model(spec: str) -> OpenAICompatModel:
    """``deepseek:MODEL``."""
    return OpenAICompatModel(spec, provider="deepseek")


def openai_compatible_model(spec: str) -> OpenAICompatModel:
    """``openai-compatible:MODEL`` (with ``NBAGENT_BASE_URL``) or ``openai-compatible:MODEL@URL``."""
    model, url = _split_url(spec)
    name = f"openai-compatible:{model}" + (f"@{scrub(url)}" if url else "")
    return OpenAICompatModel(model, provider="openai-compatible", base_url=url, name=name)
