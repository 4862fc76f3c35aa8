"""The session tab's "What if…" and "Which context mattered?" run in a notebook's kernel (SPEC §11.4,
§11.5): the lab extension opens a comm on :data:`TARGET` with one request.

- ``{"request": "holds", "session": ID}``: answered ``{"holds": bool}`` (is ``ID`` this kernel's
  current session?), then closed: how the tab finds a notebook whose kernel holds the session.
- ``{"request": "whatif-replay", "session": ID, "turn", "key", "drop", "move", "add"}`` and
  ``{"request": "why-plan" | "why-run", "session": ID, "turn"}``: the same messages the timeline
  widget answers (nbagent/widgets/whatif.py: ``whatif-started``, ``whatif-patch``, ``whatif-done``,
  ``whatif-error``; ``why-plan``, ``why-done``, ``why-error``) come back on the comm, which closes
  after the last one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from nbagent.agent import Agent
from nbagent.notebook.kernel.comm_target import CommTarget

log = logging.getLogger("nbagent.notebook")
TARGET = "nbagent.whatif"
FINAL = {"whatif-done", "whatif-error", "why-plan", "why-done", "why-error"}
DELAY = 0.04


class WhatIfComms(CommTarget):
    """Listens on :data:`TARGET` and runs the tab's requests against the kernel's current agent."""

    target = TARGET

    def __init__(self, agent: Callable[[], Agent | None], manager: Any = None) -> None:
        super().__init__(manager)
        self._agent = agent
        self._runs: dict[str, Any] = {}

    def _opened(self, comm: Any, msg: Mapping[str, Any]) -> None:
        data = msg.get("content", {}).get("data")
        try:
            self.answer(data if isinstance(data, dict) else {}, lambda m: _send(comm, m))
        except Exception as exc:  # never raised into the kernel's comm handling
            log.warning("nbagent what-if request failed: %s", exc)
            _send(comm, {"type": "whatif-error", "message": f"could not run that here: {exc}"})

    def answer(self, data: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> None:
        """Answer one request (``send`` closes the channel after a final message)."""
        agent = self._agent()
        holds = agent is not None and not agent.closed and agent.session_id == data.get("session")
        request = data.get("request")
        if request == "holds":
            send({"type": "holds", "holds": holds})
            return
        if agent is None or not holds:
            send({"type": "whatif-error", "message": "this kernel no longer holds that session"})
            return
        try:
            from nbagent.widgets.whatif import handle, handle_why
        except ImportError as exc:  # no anywidget: the tab offers the magic lines instead
            send({"type": "whatif-error", "message": f"replays from the page need anywidget here: {exc}"})
            return
        content = {**data, "type": request}
        if not (handle(agent, self._runs, content, send, DELAY) or handle_why(agent, content, send)):
            send({"type": "whatif-error", "message": f"unknown request {request!r}"})


def _send(comm: Any, message: dict[str, Any]) -> None:
    try:
        comm.send(message)
        if message.get("type") in FINAL or message.get("type") == "holds":
            comm.close()
    except Exception:  # the page went away: nothing to tell
        pass
