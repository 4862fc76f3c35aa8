"""Estimated input tokens of a request, by source kind (SPEC §12).

Every request is measured before it is sent: the history it carries (each message under its §2.3
source kind; assistant answers under ``assistant``), the system prompt (``system``) and the tool
schemas (``tools``). The numbers come from one :class:`TokenCounter`:

- ``tiktoken``: the model is an OpenAI one and tiktoken is installed *and* its encoding can be
  loaded (tiktoken downloads encoding files on first use; offline it cannot, unless they are in
  ``TIKTOKEN_CACHE_DIR``). A failed load is tried once per encoding per process, never per request.
  The load runs in a worker thread, started when a session opens with such a model
  (:func:`preload_for`); the agent loop awaits it before its first estimate without blocking its
  thread (:func:`encoding_ready`), so estimates stay deterministic. Only a load still unfinished
  after :data:`LOAD_WAIT_S` (a network that hangs) lets a request be counted with the characters
  rule; the event says so (``counter: "chars"``) and later requests count with tiktoken once loaded.
- ``chars``: otherwise, the characters-per-token rule, per piece of text (a text or reasoning
  block, a tool call's name and its arguments, a system prompt, the tool schemas as compact JSON):
  one token per four ASCII characters, rounded up, plus one token per character outside ASCII
  (CJK and emoji cost about a token each or more); and a flat :data:`IMAGE_TOKENS` per image.
  The DataFrame summary's budget and ``%inject``'s receipt count with the same rule.

Pieces are counted one by one and added up, so the parts of an estimate sum exactly to its total.
The history is counted incrementally: a step measures only the messages added since the last one.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, NamedTuple, Protocol

CHARS_PER_TOKEN = 4
"""The characters-per-token rule: one token per four ASCII characters, rounded up per piece (and
one per character outside ASCII)."""
IMAGE_TOKENS = 765
"""What an image counts, whatever its size (OpenAI's figure for a 1024×1024 image at high detail)."""
WARN_RATIO = 0.9
"""A request estimated above this share of the model's context window carries a warning."""
OPENAI_PROVIDERS = frozenset({"openai", "azure", "azure-openai"})
"""Providers whose models tiktoken counts (other OpenAI-compatible servers run other tokenizers)."""
LOAD_WAIT_S = 10.0
"""How long the agent loop (or a view) waits for an encoding still loading before counting with the
characters rule (tiktoken's download has no timeout of its own)."""


class TokenCounter(Protocol):
    """Counts the tokens of a piece of text; ``name`` is what estimates record as ``counter``."""

    name: str

    def count(self, text: str) -> int: ...


class CharCounter:
    """The characters-per-token rule (``counter: "chars"``)."""

    name = "chars"

    def count(self, text: str) -> int:
        if text.isascii():
            return -(-len(text) // CHARS_PER_TOKEN)
        wide = sum(1 for ch in text if ord(ch) > 127)
        return -(-(len(text) - wide) // CHARS_PER_TOKEN) + wide


class TiktokenCounter:
    """Exact counts from a tiktoken ``Encoding`` (``counter: "tiktoken"``)."""

    name = "tiktoken"

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text)) if text else 0


CHARS = CharCounter()

_encodings: dict[str, Any] = {}
"""Loaded encodings by model name; ``None`` records a failed load (never tried again)."""
_loading: dict[str, Future[None]] = {}
"""Loads in progress in a worker thread, by model name."""
_encodings_lock = threading.Lock()


def use_encoding(model: str, encoding: Any) -> None:
    """Count ``model``'s requests with ``encoding`` (a ``tiktoken.Encoding``; ``None`` forces the
    characters rule). For tests and for encodings loaded from elsewhere."""
    with _encodings_lock:
        _encodings[model] = encoding


def _load_encoding(model: str) -> Any:
    """tiktoken's encoding for ``model``, or ``None`` when tiktoken or its files are unavailable."""
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        try:
            return tiktoken.encoding_for_model(model)
        except KeyError:  # a model tiktoken does not map: the current OpenAI encoding
            return tiktoken.get_encoding("o200k_base")
    except Exception:  # offline: the encoding file cannot be downloaded (requests' errors, OSError…)
        return None


def preload(provider: str, model: str) -> Future[None] | None:
    """Start loading ``model``'s encoding in a worker thread, once per model per process.

    Returns the load's future while it runs, or ``None`` when there is nothing to wait for (not an
    OpenAI model, or the encoding is loaded or known to be unavailable).
    """
    if provider not in OPENAI_PROVIDERS:
        return None
    with _encodings_lock:
        if model in _encodings:
            return None
        loading = _loading.get(model)
        if loading is None:
            loading = _loading[model] = Future()
            worker = threading.Thread(
                target=_load_into, args=(model, loading), name="nbagent-tiktoken", daemon=True
            )
            worker.start()
    return loading


def _load_into(model: str, loading: Future[None]) -> None:
    loading.set_running_or_notify_cancel()  # from here on nobody can cancel it under its other waiters
    encoding = None
    try:
        encoding = _load_encoding(model)
    finally:
        with _encodings_lock:
            _encodings.setdefault(model, encoding)
            del _loading[model]
        loading.set_result(None)


def preload_for(model: Any) -> Future[None] | None:
    """:func:`preload` for a model object (what a session opening with ``model`` starts)."""
    from nbagent.models.base import model_provider

    return preload(model_provider(model), getattr(model, "model", None) or model.name)


async def encoding_ready(model: Any) -> None:
    """Await ``model``'s encoding load (started now if it was not), at most :data:`LOAD_WAIT_S`,
    without blocking the calling loop's thread."""
    loading = preload_for(model)
    if loading is not None:
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(loading)), LOAD_WAIT_S)
        except asyncio.TimeoutError:
            pass


def ready_counter(provider: str, model: str) -> TokenCounter | None:
    """The counter for a model if it is settled, ``None`` while its encoding is still loading."""
    if provider not in OPENAI_PROVIDERS:
        return CHARS
    with _encodings_lock:
        if model not in _encodings:
            return None
        encoding = _encodings[model]
    return CHARS if encoding is None else TiktokenCounter(encoding)


def counter_for(provider: str, model: str) -> TokenCounter:
    """The counter for a model: tiktoken for an OpenAI model when it loads, else the chars rule.

    Waits for the encoding to load (in its worker thread) when it is not loaded yet, at most
    :data:`LOAD_WAIT_S`: past that, the characters rule.
    """
    loading = preload(provider, model)
    if loading is not None:
        try:
            loading.result(LOAD_WAIT_S)
        except FutureTimeout:
            return CHARS
    counter = ready_counter(provider, model)
    assert counter is not None  # settled once its load finished
    return counter


def model_counter(model: Any) -> TokenCounter:
    """The counter a model's requests are measured with (what its ``request/estimate`` says)."""
    from nbagent.models.base import model_provider

    return counter_for(model_provider(model), getattr(model, "model", None) or model.name)


# -- measuring messages -----------------------------------------------------------------------------


def block_tokens(block: Mapping[str, Any], counter: TokenCounter) -> int:
    """The tokens of one content block (text, reasoning, tool call, tool result, image, other)."""
    kind = block.get("type")
    if kind == "text" or kind == "reasoning":
        return counter.count(str(block.get("text", "")))
    if kind == "tool-call":
        return counter.count(str(block.get("name", ""))) + counter.count(str(block.get("arguments", "")))
    if kind == "tool-result":
        return content_tokens(block.get("content") or (), counter)
    if kind == "image":
        return IMAGE_TOKENS
    return counter.count(json.dumps(block, separators=(",", ":"), ensure_ascii=False, default=str))


def content_tokens(content: Sequence[Any], counter: TokenCounter) -> int:
    if len(content) == 1:  # the common case: one text block
        block = content[0]
        if isinstance(block, dict):  # (stored blocks are dicts: a cheaper check than Mapping's)
            if block.get("type") == "text":
                return counter.count(str(block.get("text", "")))
            return block_tokens(block, counter)
    return sum(block_tokens(b, counter) for b in content if isinstance(b, dict))


def message_kind(message: Any) -> str:
    """The estimate's source kind of a message: its §2.3 kind; an answer counts as ``assistant``."""
    if message.role == "assistant":
        return "assistant"
    return str(message.source.get("kind") or "?")


def source_label(source: Mapping[str, Any]) -> str:
    """A short name for a message's source (its label, frame or variable name, error, plugin, call)."""
    for key in ("label", "name", "plugin", "ename", "call_id", "model"):
        value = source.get(key)
        if isinstance(value, str) and value:
            return " ".join(value.split())[:80]
    return ""


class Item(NamedTuple):
    """One measured message: its kind, its tokens, and its source (for its label)."""

    kind: str
    tokens: int
    source: Mapping[str, Any]

    @property
    def label(self) -> str:
        return source_label(self.source)


def measure(message: Any, counter: TokenCounter) -> Item:
    return Item(message_kind(message), content_tokens(message.content, counter), message.source)


def header_tokens(system: str | None, tools: Any, counter: TokenCounter) -> tuple[int, int]:
    """The tokens of the system prompt and of the tool schemas (as compact JSON)."""
    tools_json = (
        json.dumps([dict(t) for t in tools], separators=(",", ":"), ensure_ascii=False) if tools else ""
    )
    return counter.count(system or ""), counter.count(tools_json)


class Estimate(NamedTuple):
    """A request's estimated input tokens by source kind (``sum(by_source.values()) == total``)."""

    total: int
    by_source: dict[str, int]
    counter: str
    window: int | None
    warning: dict[str, Any] | None


def warning_for(total: int, window: int | None, items: Sequence[Item]) -> dict[str, Any] | None:
    """The §12 warning when ``total`` is above 90 % of ``window``: the three largest messages."""
    if not window or total <= WARN_RATIO * window:
        return None
    largest = heapq.nlargest(3, items, key=lambda i: i.tokens)
    return {
        "threshold": WARN_RATIO,
        "estimate": total,
        "window": window,
        "largest": [{"source": i.kind, "label": i.label, "tokens": i.tokens} for i in largest],
    }


class Meter:
    """Running token counts of a session's history, so each request measures only what is new.

    ``history`` is the committed model history (it only grows); the messages not yet committed
    (staged by this step, or by the step before) are measured on each call.
    """

    def __init__(self, model: Any = None) -> None:
        """With ``model``, its tiktoken encoding (an OpenAI model's) starts loading in a worker thread."""
        if model is not None:
            preload_for(model)
        self._counter_key: tuple[str, str] | None = None
        self.counter: TokenCounter = CHARS
        self._provisional = False
        """Counting with the characters rule only because the model's encoding is still loading."""
        self._counted = 0
        self._by_source: dict[str, int] = {}
        self._items: list[Item] = []
        self._fixed: tuple[Any, Any, int, int] | None = None
        self._measured: dict[int, tuple[Any, Item]] = {}
        """Messages measured while uncommitted, by identity: not measured again once committed."""

    def _use(self, provider: str, model: str) -> None:
        """Count with ``model``'s counter; while its encoding is still loading, provisionally with
        the characters rule. Another counter than last time counts everything again."""
        key = (provider, model)
        if self._counter_key == key and not self._provisional:
            return
        counter = ready_counter(provider, model)
        self._provisional = counter is None
        counter = counter or CHARS
        if self._counter_key != key or counter.name != self.counter.name:
            self._counter_key = key
            self.counter = counter
            self._counted, self._by_source, self._items, self._fixed = 0, {}, [], None
            self._measured = {}

    def _catch_up(self, history: Callable[[int], tuple[int, Sequence[Any]]]) -> None:
        by_source, items, counter = self._by_source, self._items, self.counter
        length, new = history(self._counted)
        measured = self._measured
        for message in new:
            known = measured.get(id(message))
            item = known[1] if known is not None and known[0] is message else measure(message, counter)
            items.append(item)
            by_source[item.kind] = by_source.get(item.kind, 0) + item.tokens
        self._counted = length
        measured.clear()

    def _header(self, system: str | None, tools: Any) -> tuple[int, int]:
        fixed = self._fixed
        if fixed is None or fixed[0] is not system or fixed[1] is not tools:
            tools_json = json.dumps(list(tools), separators=(",", ":"), ensure_ascii=False) if tools else ""
            fixed = self._fixed = (
                system,
                tools,
                self.counter.count(system or ""),
                self.counter.count(tools_json),
            )
        return fixed[2], fixed[3]

    def estimate(
        self,
        *,
        provider: str,
        model: str,
        history: Callable[[int], tuple[int, Sequence[Any]]],
        extra: Iterable[Any],
        system: str | None,
        tools: Any,
        window: int | None,
    ) -> Estimate:
        """The estimate of a request carrying the committed history then ``extra`` (uncommitted
        messages); ``history(start)`` gives the history's length and its messages from ``start``."""
        self._use(provider, model)
        self._catch_up(history)
        by_source = dict(self._by_source)
        extra_items = []
        for message in extra:
            item = measure(message, self.counter)
            self._measured[id(message)] = (message, item)
            extra_items.append(item)
        for item in extra_items:
            by_source[item.kind] = by_source.get(item.kind, 0) + item.tokens
        system_tokens, tools_tokens = self._header(system, tools)
        if system_tokens:
            by_source["system"] = system_tokens
        if tools_tokens:
            by_source["tools"] = tools_tokens
        total = sum(by_source.values())
        warning = None
        if window and total > WARN_RATIO * window:
            warning = warning_for(total, window, [*self._items, *extra_items])
        return Estimate(total, by_source, self.counter.name, window, warning)


# -- context windows --------------------------------------------------------------------------------

_windows: dict[tuple[str, str], int | None] = {}


def context_window(
    model: Any, provider: str, lookup: Callable[[str, str], int | None] | None = None
) -> int | None:
    """The model's context window: its own ``context_window`` attribute, else what ``lookup`` (the
    price table, ``nbagent.usage.table_window``, given by the layer above) says, else ``None``."""
    own = getattr(model, "context_window", None)
    if isinstance(own, int) and own > 0:
        return own
    name = getattr(model, "model", None)
    if not isinstance(name, str) or not name:
        return None
    if lookup is None:
        return None
    key = (provider, name)
    if key not in _windows:
        _windows[key] = lookup(provider, name)
    return _windows[key]
