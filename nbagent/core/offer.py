"""What an agent offers the model on its next request: the model, the tools, the system prompt, the
approver asked before a tool that needs approval, and what a request over the context window does.

One :class:`Offer` per agent: the agent changes it (``set_model``, ``add_tool``, ``agent.approver``,
...), the driver reads it for each request (a change is recorded by a ``request/header``), and the
loop and the tool batch read it through their port.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Literal

from nbagent.core.tools import Tool
from nbagent.models.base import Model

Approver = Callable[[Tool, Any], Coroutine[Any, Any, str]]
"""Asked before a tool that ``requires_approval`` runs: returns ``"allowed-once"``,
``"allowed-session"`` (allowed by an allowance for the rest of the session), ``"rejected"`` or
``"unavailable"``. An ``async def`` (or any callable returning a coroutine): the tool batch runs it
as a task."""

ContextLimit = Literal["warn", "block"]


class Offer:
    """The model, tools, system prompt, approver and context limit of the next request."""

    __slots__ = ("_schemas", "approver", "context_limit", "model", "stand_in", "system", "tools")

    def __init__(self, model: Model, tools: dict[str, Tool], system: str | None) -> None:
        self.model = model
        """The model of the next request."""
        self.tools = tools
        """The offered tools by name."""
        self.system = system
        self.approver: Approver | None = None
        """With none set, calls of tools that need approval are ``unavailable``."""
        self.context_limit: ContextLimit = "warn"
        """``"block"``: a request estimated over the context window is not sent."""
        self.stand_in: Callable[[str], Tool | None] | None = None
        """Answers a call of a tool not offered now (an MCP server's, while it starts or after it failed)."""
        self._schemas: tuple[Any, ...] | None = None

    @property
    def tool_schemas(self) -> tuple[Any, ...]:
        """The JSON schemas of the offered tools, as requests carry them (cached until a change)."""
        if self._schemas is None or len(self._schemas) != len(self.tools):
            self._schemas = tuple(t.schema for t in self.tools.values())
        return self._schemas

    def tools_changed(self) -> None:
        self._schemas = None

    def tool_for(self, name: str) -> Tool | None:
        """The tool that answers a call of ``name``: an offered one, else the stand-in's (if any)."""
        tool = self.tools.get(name)
        return tool if tool is not None or self.stand_in is None else self.stand_in(name)
