"""What the core asks of the floors above it, as narrow protocols: a store it appends to and a
lease it releases (the backends in ``nbagent/store/`` fit them), and a context-window lookup (the
price table of ``nbagent/usage.py`` fits it). The core imports none of those modules."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

WindowLookup = Callable[[str, str], "int | None"]
"""``(provider, model) -> context window in tokens``, or ``None`` when unknown."""


class SessionFile(Protocol):
    """The session's store as the core uses it: the journal's one append and the agent's updates."""

    path: Path | str
    """``agent.path``: the file's path, or (PostgreSQL) the address without credentials."""

    def write(self, rows: Sequence[Any], *, session: Any = None) -> None:
        """Append ``rows`` atomically (all or nothing), or raise ``SessionWriteError``."""

    def update_session(self, session_id: str, **fields: Any) -> None: ...

    def close(self, *, checkpoint: bool = True) -> None: ...


class Releasable(Protocol):
    """A session's one-writer lease."""

    def release(self) -> None: ...
