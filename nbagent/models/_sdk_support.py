"""Helpers shared by the provider models: cancellation racing, settings from the environment, images.

Nothing here imports a provider SDK; the provider modules import theirs lazily, on first request.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import mimetypes
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TypeVar

from nbagent._json import thaw
from nbagent.models._http_failures import failure_from_exception
from nbagent.models.base import CancelSignalLike, Chunk, Finish, ReasoningDelta, TextDelta
from nbagent.redaction import MIN_KNOWN, REDACTED
from nbagent.redaction_known import known_removed

T = TypeVar("T")

DEFAULT_CONNECT_TIMEOUT = 15.0
DEFAULT_READ_TIMEOUT = 300.0
"""Seconds between bytes of a streamed answer before the request fails with ``TIMEOUT``."""


class SignalCancelled(Exception):
    """The turn's signal fired while the model was waiting on the network."""


class SignalWatch:
    """Races network awaits against ``signal.wait()`` so a cancel ends a stalled read at once.

    The loop also cancels the task consuming the model's stream; this covers a caller that only
    sets the signal. The raced await runs in a child task that is cancelled (and awaited, so the
    SDK's ``finally`` closes the HTTP response) when the signal wins.
    """

    def __init__(self, signal: CancelSignalLike | None) -> None:
        self._signal = signal
        self._waiter: asyncio.Future[Any] | None = None

    @property
    def cancelled(self) -> bool:
        return bool(self._signal is not None and self._signal.cancelled)

    async def run(self, aw: Awaitable[T]) -> T:
        """Await ``aw``; raise :class:`SignalCancelled` if the signal fires first."""
        if self._signal is None:
            return await aw
        if self._signal.cancelled:
            if asyncio.iscoroutine(aw):
                aw.close()
            raise SignalCancelled
        if self._waiter is None:
            self._waiter = asyncio.ensure_future(self._signal.wait())
        task = asyncio.ensure_future(aw)
        try:
            await asyncio.wait({task, self._waiter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            await _cancel_and_settle(task)
            raise
        if task.done():
            return task.result()
        await _cancel_and_settle(task)
        raise SignalCancelled

    async def iterate(self, stream: Any) -> AsyncGenerator[Any, None]:
        """Items of an async iterator until it ends or the signal fires."""
        while True:
            try:
                item = await self.run(stream.__anext__())
            except (StopAsyncIteration, SignalCancelled):
                return
            yield item

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter.cancel()
            self._waiter = None


async def _cancel_and_settle(task: asyncio.Future[Any]) -> None:
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: an error racing the cancel is not worth a warning


async def import_sdk(name: str) -> ModuleType:
    """Import a provider SDK off the event loop: ``anthropic`` takes seconds to import, and the
    kernel's loop (widgets, other cells' output) should not freeze for it on the first request."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    return await asyncio.to_thread(importlib.import_module, name)


def env(name: str) -> str | None:
    """An environment variable, with blank values treated as unset."""
    value = os.environ.get(name)
    return value.strip() if value and value.strip() else None


def tool_schemas(tools: tuple[Mapping[str, Any], ...]) -> list[dict[str, Any]]:
    """Plain ``{"name", "description", "parameters"}`` dicts from the request's frozen schemas."""
    out = []
    for tool in tools:
        plain = thaw(tool)
        if "function" in plain and isinstance(plain["function"], dict):  # already OpenAI-shaped
            plain = plain["function"]
        params = plain.get("parameters") or plain.get("input_schema") or {"type": "object", "properties": {}}
        out.append(
            {"name": plain["name"], "description": plain.get("description") or "", "parameters": params}
        )
    return out


def image_data(block: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(mime, base64_data)`` of an image block given inline (``data``) or by ``path``; ``None`` if unreadable."""
    mime = block.get("mime") or block.get("mime_type")
    data = block.get("data")
    if isinstance(data, str) and data:
        if data.startswith("data:") and ";base64," in data:
            head, data = data.split(";base64,", 1)
            mime = mime or head[5:]
        return (str(mime or "image/png"), data)
    path = block.get("path")
    if isinstance(path, str) and path:
        try:
            raw = Path(path).read_bytes()
        except OSError:
            return None
        mime = mime or mimetypes.guess_type(path)[0] or "image/png"
        return (str(mime), base64.b64encode(raw).decode("ascii"))
    return None


def text_of(blocks: Any) -> str:
    """Concatenated ``text`` blocks; other blocks become a short placeholder such as ``[image]``."""
    if isinstance(blocks, str):
        return blocks
    parts = []
    for block in blocks or ():
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(f"[{block.get('type', 'block')}]")
    return "".join(parts)


def loop_key() -> int:
    """Identity of the running event loop: an SDK client's connection pool belongs to one loop."""
    try:
        return id(asyncio.get_running_loop())
    except RuntimeError:
        return 0


class ClientCache:
    """One SDK client per (event loop, key): a client's connection pool belongs to one loop."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._clients: dict[tuple[int, str], Any] = {}

    def get(self, key: str, sdk: Any, client_class: str, base_url: str) -> Any:
        """The cached ``sdk.<client_class>`` for ``key`` on this loop, built with retries off."""
        cache_key = (loop_key(), key)
        client = self._clients.get(cache_key)
        if client is None:
            timeout = sdk.Timeout(
                self.timeout if self.timeout is not None else DEFAULT_READ_TIMEOUT,
                connect=min(DEFAULT_CONNECT_TIMEOUT, self.timeout or DEFAULT_CONNECT_TIMEOUT),
            )
            self._clients.clear()
            client = getattr(sdk, client_class)(
                api_key=key, base_url=base_url, max_retries=0, timeout=timeout
            )
            self._clients[cache_key] = client
        return client

    async def aclose(self) -> None:
        """Close the clients' connections (optional; they also close with the process)."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


class StreamState(Protocol):
    """A provider's translator from SDK stream events to nbagent chunks."""

    def feed(self, event: Any) -> list[Chunk]: ...

    def end(self) -> list[Chunk]: ...


def _without_key(chunk: Chunk, known: Sequence[str]) -> Chunk:
    """A text or reasoning piece with the request's own key (any run of a dozen of its characters)
    replaced: a server that echoes the key in a 200 answer does not put it in the log. Other text of
    the answer (a ``password = …`` line of code the model wrote) is left as the model wrote it."""
    if type(chunk) is TextDelta or type(chunk) is ReasoningDelta:
        text = known_removed(chunk.text, known, REDACTED)
        if text != chunk.text:
            return type(chunk)(text)
    return chunk


async def sdk_chunks(
    signal: CancelSignalLike,
    open_stream: Callable[[], Awaitable[Any]],
    state: StreamState,
    provider: str,
    on_done: Callable[[], None] | None = None,
    secrets: Sequence[str | None] = (),
) -> AsyncGenerator[Chunk, None]:
    """Open an SDK stream and translate its events; a failure becomes ``Finish("error")``.

    Every network wait races the turn's signal, and the response is always closed (``async
    with``), also when the signal cancels mid-stream. After a complete stream, ``on_done`` runs and
    the state's end-of-stream chunks (usage, finish) follow. ``secrets`` (the request's API key)
    never appear in a failure's text nor in the answer's text.
    """
    watch = SignalWatch(signal)
    try:
        try:
            sdk_stream = await watch.run(open_stream())
        except SignalCancelled:
            return
        except Exception as exc:
            yield Finish("error", failure_from_exception(exc, provider=provider, secrets=secrets))
            return
        known = sorted({k for k in secrets if k and len(k) >= MIN_KNOWN}, key=len, reverse=True)
        async with sdk_stream, aclosing(watch.iterate(sdk_stream)) as events:
            try:
                async for event in events:
                    for chunk in state.feed(event):
                        yield _without_key(chunk, known) if known else chunk
            except Exception as exc:
                yield Finish("error", failure_from_exception(exc, provider=provider, secrets=secrets))
                return
        if watch.cancelled:
            return
        if on_done is not None:
            on_done()
        for chunk in state.end():
            yield chunk
    finally:
        watch.close()
