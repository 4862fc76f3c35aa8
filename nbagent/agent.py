"""``nbagent.Agent``: the core agent plus what drives it from outside: forks and what-if replays
(SPEC §11, ``nbagent/forks/``) and MCP servers (SPEC §9.7, ``nbagent/mcp/``).

The core (``nbagent/core/agent.py``) knows none of these: they use its public surface, and this
class only names them as methods, so ``agent.fork()`` and ``agent.add_mcp_server()`` read as SPEC
writes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from nbagent.core.agent import AgentCore, LiveNotice
from nbagent.core.runs import Run
from nbagent.errors import NbagentError
from nbagent.log.messages import UserMessage
from nbagent.models.base import Model

if TYPE_CHECKING:
    from nbagent.forks.replay import Arrival
    from nbagent.mcp.servers import McpServers, ServerInfo
    from nbagent.store.base import SessionStore
    from nbagent.views.attribution import Attribution, AttributionPlan

__all__ = ["Agent", "LiveNotice"]


def _table_window(provider: str, model: str) -> int | None:
    """A model's context window from the price table (imported when a request first needs it)."""
    from nbagent.usage import table_window

    return table_window(provider, model)


class Agent(AgentCore):
    """One live agent session: an append-only log, an inbox, and a driver that runs turns.

    Build one with :func:`nbagent.open_session` or :func:`nbagent.resume_session`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(window_lookup=_table_window, **kwargs)
        self.reopen: Callable[..., Agent] | None = None
        """Opens a stored session as an agent (``resume_session``, set by the session layer): how
        ``fork`` opens the child without this module importing the session layer."""
        self._mcp: McpServers | None = None

    # -- forks and replays (SPEC §11) -------------------------------------------------------------

    def fork(
        self,
        *,
        before_turn: int | None = None,
        at: int | None = None,
        session_id: str | None = None,
        model: Model | str | None = None,
        to: str | os.PathLike[str] | None = None,
        purpose: str | None = None,
    ) -> Agent:
        """A new session beginning with this one's log up to a quiet point (SPEC §11.1); see
        :func:`nbagent.fork_session`. The child gets this agent's tools and system prompt;
        ``purpose`` is recorded on its ``session/forked`` (``"attribution"`` for §11.5's runs)."""
        from nbagent.forks.new_fork import create_fork

        # the session layer builds every Agent over a SessionStore
        store = cast("SessionStore | None", self.driver.file)
        if store is None or self.reopen is None:
            raise NbagentError("an in-memory session (path=None) has no log to fork from")
        where = store.where  # where it was opened (a PostgreSQL URL keeps its credentials)
        name = model if isinstance(model, str) else model.name if model is not None else None
        made = create_fork(where, self.session_id, before_turn=before_turn, at=at, new_session_id=session_id,
                           model_name=name, to=to, purpose=purpose)  # fmt: skip
        return self.reopen(made.location, made.session_id, model=model, tools=tuple(self.tools.values()),
                           system=self.system)  # fmt: skip

    def replay_plan(self, turn: int) -> tuple[Arrival, ...]:
        """The parent's arrivals during its turn ``turn`` (SPEC §11.2), for a fork made before it:
        each with its action, step (delivered while it runs), ``seen_by``, label, source and preview."""
        from nbagent.forks.replay import replay_plan

        return replay_plan(self, turn)

    async def replay(
        self,
        turn: int,
        *,
        drop: Iterable[str] = (),
        move: Mapping[str, int] | None = None,
        add: Iterable[tuple[UserMessage | str, int]] = (),
        model: Model | str | None = None,
    ) -> Run:
        """Re-enact the parent's turn ``turn`` here with its arrivals edited (SPEC §11.2).

        ``drop``: ids not to re-deliver (an id pending here before the turn is removed in the
        replay's first commit); ``move``: ``{id: k}``, delivered while step k runs (seen by step
        k + 1; 0 = before the turn); ``add``: ``[(message, k)]``. An unknown id or a step below 0
        raises ``ValueError`` before anything is written. The edit is recorded as
        ``session/replayed``; arrivals due at a step the turn never reached stay pending and are
        listed in ``run.late``."""
        from nbagent.forks.replay import replay

        return await self._on_own_loop(replay(self, turn, drop, move, add, model))

    # -- which context mattered (SPEC §11.5) --------------------------------------------------------

    def attribution_plan(self, turn: int, *, model: Model | str | None = None) -> AttributionPlan:
        """The items of turn ``turn`` (every message it claimed but its opener), the runs an
        attribution makes (one per item left out, plus a control) and their estimate; writes nothing."""
        from nbagent.forks.attribution import attribution_plan

        return attribution_plan(self, turn, model)

    async def attribute(
        self,
        turn: int,
        *,
        items: Iterable[str] | None = None,
        model: Model | str | Callable[[], Model] | None = None,
        max_runs: int = 32,
    ) -> Attribution:
        """Replay turn ``turn`` once per item with that item left out, and once with nothing left out
        (the control), each in a fork marked ``purpose="attribution"``; score each item by how much the
        answer changed (SPEC §11.5). ``items`` narrows to some ids; more runs than ``max_runs`` raise
        ``ValueError`` before any fork. ``model`` may be a function returning a fresh model per run
        (a ``ScriptedModel`` plays its script once). This session is never written."""
        from nbagent.forks.attribution import attribute

        return await self._on_own_loop(attribute(self, turn, items, model, max_runs))

    # -- MCP servers (SPEC §9.7) ------------------------------------------------------------------

    @property
    def mcp(self) -> McpServers:
        """The session's MCP servers (SPEC §9.7): ``list()``, ``await remove(name)``, ``allow_read_only``."""
        if self._mcp is None:
            from nbagent.mcp.servers import McpServers

            self._mcp = McpServers(self)
            self.offer.stand_in = self._mcp.stand_in
            self.on_close.append(self._mcp.close)
        return self._mcp

    def add_mcp_server(
        self,
        name: str,
        *,
        command: str | None = None,
        args: Iterable[str] = (),
        env: dict[str, str] | None = None,
        url: str | None = None,
        headers: dict[str, str] | None = None,
        allow_read_only: bool = False,
        start_timeout: float | None = None,
        call_timeout: float | None = None,
    ) -> ServerInfo:
        """Connect an MCP server (``command`` over stdio, or a streamable HTTP ``url`` with ``headers``) and offer its tools
        as ``NAME__TOOL``. Returns at once: the server starts in the background and the first request
        after this waits at most 10 s for its tools. A server that cannot start does not raise here;
        calls to its tools get error results saying why. A stdio server gets the SDK's default environment
        plus ``env`` (no secret of the kernel's unless ``env`` names it).
        Each call asks for approval unless the tool is annotated read-only and ``allow_read_only``.
        """
        from nbagent.mcp.config import CALL_TIMEOUT, START_TIMEOUT, server_spec

        spec = server_spec(
            name,
            command=command,
            args=tuple(args),
            env=env,
            url=url,
            headers=headers,
            allow_read_only=allow_read_only,
            start_timeout=START_TIMEOUT if start_timeout is None else start_timeout,
            call_timeout=CALL_TIMEOUT if call_timeout is None else call_timeout,
        )
        return self.mcp.add(spec)
