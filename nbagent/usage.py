"""Prices and context windows from the maintained ``genai-prices`` table (SPEC §12).

Cost is worked out when a view is drawn, from the usage the provider reported, and never stored:
a newer table re-prices old sessions. A model the table does not know has no cost and no window
(``None``: the views say "unknown"). Without ``genai-prices`` installed every answer is ``None``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

_lock = threading.Lock()

PROVIDER_IDS = {"openai": "openai", "anthropic": "anthropic", "deepseek": "deepseek", "azure": "azure"}
"""nbagent provider prefixes → the table's provider ids (others are matched by model name only)."""


NOT_PRICED = frozenset({"", "echo", "scripted"})
"""nbagent's own offline models: never looked up."""


@lru_cache(maxsize=256)
def _model_info(provider: str, model: str) -> Any:
    if provider in NOT_PRICED or not model:
        return None
    try:
        from genai_prices import data_snapshot
    except ImportError:
        return None
    snapshot = data_snapshot.get_snapshot()
    provider_id = PROVIDER_IDS.get(provider)
    try:
        return snapshot.find_provider_model(model, None, provider_id, None)
    except LookupError:
        if provider_id is None:
            return None
        try:  # an OpenAI-compatible server running a model the table knows under its maker
            return snapshot.find_provider_model(model, None, None, None)
        except LookupError:
            return None


def model_info(provider: str, model: str) -> Any:
    """``(provider, model)`` of the table's entry, or ``None`` when the model is unknown."""
    with _lock:
        return _model_info(provider, model)


def table_window(provider: str, model: str) -> int | None:
    """The model's context window in tokens from the table, or ``None``."""
    found = model_info(provider, model)
    window = getattr(found[1], "context_window", None) if found else None
    return window if isinstance(window, int) and window > 0 else None


def cost(provider: str, model: str, usage: Mapping[str, Any]) -> Decimal | None:
    """The US-dollar cost of one answer's reported ``usage``, or ``None`` for an unknown model."""
    found = model_info(provider, model)
    if not found:
        return None
    from genai_prices import calc_price
    from genai_prices.types import Usage

    counts = {
        "input_tokens": int(usage.get("input_tokens") or 0),
        "output_tokens": int(usage.get("output_tokens") or 0),
        "cache_read_tokens": int(usage.get("cached_input_tokens") or 0),
    }
    try:
        return calc_price(Usage(**counts), found[1].id, provider_id=found[0].id).total_price
    except (LookupError, ValueError):
        return None


def cost_text(amount: Decimal | None) -> str:
    """``$0.0123``, ``$1.25``, or ``unknown``."""
    if amount is None:
        return "unknown"
    if amount >= 1:
        return f"${amount:.2f}"
    return f"${amount:.4f}"
