"""What a page reported while a test drove it: console errors and uncaught exceptions, kept for the
test to assert on (never dropped)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PageErrors:
    """Console errors (``console.error`` and failed loads) and uncaught exceptions of one page."""

    console: list[str] = field(default_factory=list)
    uncaught: list[str] = field(default_factory=list)
    stacks: list[str] = field(default_factory=list, compare=False)  # shown when a test fails

    def watch(self, page: Any) -> PageErrors:
        page.on("console", lambda msg: self.console.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: self.uncaught.append(str(exc)))
        page.on("pageerror", lambda exc: self.stacks.append(exc.stack or ""))
        return self
