"""When a request carries a ``request/header`` (SPEC §4): the first request of a session (``initial``)
or of a resumed one (``resume``), then only when the model, system prompt or tools change."""

from __future__ import annotations

from typing import Any

from nbagent.log.events import RequestHeader
from nbagent.log.vocabulary import HeaderReason


class HeaderState:
    """The settings the log's last ``request/header`` holds, and why the next one would be written."""

    def __init__(self, last: Any = None) -> None:
        self.last = last
        self.reason: HeaderReason = "resume" if last is not None else "initial"

    def draft(self, model: str, system: str | None, tools: tuple[Any, ...]) -> RequestHeader | None:
        """The header record for these settings, or ``None`` when the last one holds them already."""
        header = RequestHeader(model, self.reason, system, tools)
        if self.last is not None and self.reason == "change" and self.last == header.settings:
            return None
        self.last, self.reason = header.settings, "change"
        return header
