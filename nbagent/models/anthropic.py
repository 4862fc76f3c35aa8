"""Anthropic Messages API models through the official ``anthropic`` SDK.

``anthropic:MODEL`` (for example ``"anthropic:claude-sonnet-4-5"``) reads ``ANTHROPIC_API_KEY``
when a request is made and ``ANTHROPIC_BASE_URL`` (default https://api.anthropic.com)
when the model is created; constructor arguments override both. Keys never reach the session file:
the log stores only ``model.name``. The SDK's retries are off (``max_retries=0``); the loop retries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from types import ModuleType
from typing import Any

from nbagent.models._anthropic_wire import (
    AnthropicStreamState,
    anthropic_tools,
    first_tool_call_id,
    to_anthropic_messages,
)
from nbagent.models._http_failures import missing_key_failure
from nbagent.models._sdk_support import (
    ClientCache,
    env,
    import_sdk,
    sdk_chunks,
    tool_schemas,
)
from nbagent.models.base import CancelSignalLike, Chunk, Finish, ModelRequest

DEFAULT_MAX_TOKENS = 8192
_THINKING_MEMORY = 256
"""How many answers' signed thinking blocks a model keeps for sending back with tool results."""
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicModel:
    """A Claude model streamed with ``AsyncAnthropic``.

    ``max_tokens`` is required by the API (default 8192). ``thinking_budget`` turns on extended
    thinking, streamed as reasoning. Tool use with thinking needs the signed thinking blocks sent
    back; the model keeps them in memory for the answers it streamed, and when it has none (after
    a resume, or for another model's answer) it sends that tool-result request without thinking.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking_budget: int | None = None,
        timeout: float | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.provider = "anthropic"
        self.name = f"anthropic:{model}"
        self.base_url = base_url or env(BASE_URL_ENV) or DEFAULT_BASE_URL
        self._api_key = api_key
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})
        self._clients = ClientCache(timeout)
        self._signed_thinking: dict[str, list[dict[str, Any]]] = {}

    def __repr__(self) -> str:
        return f"AnthropicModel({self.name!r}, base_url={self.base_url!r})"

    async def stream(self, request: ModelRequest, signal: CancelSignalLike) -> AsyncIterator[Chunk]:
        key = self._api_key or env(KEY_ENV)
        if key is None:
            yield Finish("error", missing_key_failure(self.name, KEY_ENV))
            return

        async def open_stream() -> Any:
            client = self._client(key, await import_sdk("anthropic"))
            return await client.messages.create(**self.request_body(request))

        state = AnthropicStreamState()

        def remember() -> None:
            if state.thinking and state.tool_ids and state.stopped:
                self._remember_thinking(state.tool_ids[0], state.thinking)

        stream = sdk_chunks(signal, open_stream, state, self.name, remember, secrets=(key,))
        async with aclosing(stream) as chunks:
            async for chunk in chunks:
                yield chunk

    def _remember_thinking(self, first_call_id: str, blocks: list[dict[str, Any]]) -> None:
        self._signed_thinking[first_call_id] = blocks
        while len(self._signed_thinking) > _THINKING_MEMORY:
            self._signed_thinking.pop(next(iter(self._signed_thinking)))

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": to_anthropic_messages(request.messages, self._signed_thinking),
            "stream": True,
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = anthropic_tools(tool_schemas(request.tools))
        if self.thinking_budget and self._can_think(request):
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        if self.extra_body:
            body["extra_body"] = dict(self.extra_body)
        return body

    def _can_think(self, request: ModelRequest) -> bool:
        """Thinking may stay on unless the last answer called tools and its signed thinking is unknown."""
        last = next((m for m in reversed(request.messages) if m.role == "assistant"), None)
        first_call = None if last is None else first_tool_call_id(last)
        return first_call is None or first_call in self._signed_thinking

    def _client(self, key: str, sdk: ModuleType) -> Any:
        return self._clients.get(key, sdk, "AsyncAnthropic", self.base_url)

    async def aclose(self) -> None:
        """Close the SDK client's connections (optional; they also close with the process)."""
        await self._clients.aclose()


def anthropic_model(spec: str) -> AnthropicModel:
    """``anthropic:MODEL``."""
    return AnthropicModel(spec)
