"""Help for the magics (``%inject?``, ``%inject --help``), missing extras, and the short error of a
``--wait`` whose run ended in ``error``."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable
from typing import Any

from nbagent.errors import NbagentError

HELP_FLAGS = frozenset({"-h", "--help"})


def asks_for_help(options: str, text: str) -> bool:
    """True for ``-h``/``--help`` among a magic's options, or a message that is only ``?`` or ``??``
    (``%followup ?``): a help request, never a message to send."""
    return bool(HELP_FLAGS & set(options.split())) or text.strip() in ("?", "??")


def show_help(magic: Callable[..., Any]) -> None:
    """Print a magic's help: its usage line, what it does and its options (what ``%verb?`` shows)."""
    doc = inspect.getdoc(magic) or ""
    print(doc.removeprefix("::").strip("\n"))


def importable(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


PROVIDER_SDKS = {
    "openai": "openai",
    "ollama": "openai",
    "deepseek": "openai",
    "openai-compatible": "openai",
    "anthropic": "anthropic",
}
"""The SDK each provider's requests go through (SPEC §7)."""


def missing_sdk(model: Any) -> str | None:
    """The SDK package ``model``'s requests need when it is not installed, else ``None``."""
    if getattr(model, "replays_only", False):
        return None  # a replay answers from its cassette: no SDK, no key
    sdk = PROVIDER_SDKS.get(getattr(model, "provider", ""))
    return sdk if sdk is not None and not importable(sdk) else None


def missing_module(exc: ImportError) -> str:
    """The name of the module an ``ImportError`` could not import."""
    return exc.name or str(exc)


def cancelled_by_interrupt(message: str) -> KeyboardInterrupt:
    """The ``KeyboardInterrupt`` a ``--wait`` cell ends with when ■ cancels its turn: IPython shows it
    as one line (``KeyboardInterrupt: the turn was cancelled (aborted)``), not a traceback into
    nbagent's code; its name stays ``KeyboardInterrupt`` for whoever reads the reply."""
    exc = KeyboardInterrupt(message)
    exc._render_traceback_ = lambda: [f"KeyboardInterrupt: {message}"]  # type: ignore[attr-defined]
    return exc


class RunFailedError(NbagentError):
    """A ``--wait`` cell whose run ended in ``error``: shown as one line, and it fails the cell, so
    ``jupyter nbconvert --execute`` stops there."""

    @classmethod
    def from_run(cls, run: Any) -> RunFailedError:
        error = (run.end or {}).get("reason", {}).get("error", {})
        turns = ", ".join(str(t) for t in run.turns)
        code = error.get("code") or "ERROR"
        return cls(f"turn {turns} ended in error: {code}: {error.get('message') or 'no message'}")

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback."""
        return [f"{type(self).__name__}: {self}"]
