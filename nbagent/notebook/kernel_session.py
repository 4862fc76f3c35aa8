"""The kernel's one agent: opened lazily in the file beside the notebook, resumed after a restart."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from nbagent.notebook.blocking import block_on, complete_now, running_loop
from nbagent.notebook.location import notebook_path, session_file
from nbagent.pg_location import redact

if TYPE_CHECKING:
    from nbagent.agent import Agent
    from nbagent.notebook.live import LiveTurn
    from nbagent.store import SessionRow


def when(ms: int | None) -> str:
    """A Unix-ms time as local ``YYYY-MM-DD HH:MM:SS``."""
    if ms is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


class KernelSession:
    """Holds the kernel's agent and the live views of its cells; knows which file they belong in."""

    def __init__(self, user_ns: dict[str, Any]) -> None:
        self.user_ns = user_ns
        self.db_override: str | None = None
        self.agent: Agent | None = None
        self.views: list[LiveTurn] = []

    @property
    def path(self) -> Path:
        return session_file(self.user_ns, override=self.db_override)

    @property
    def shown_path(self) -> str:
        """Where the sessions live, as printed: a URL never shows its password."""
        path = self.path
        return redact(path) if isinstance(path, str) else str(path)

    def loop(self) -> asyncio.AbstractEventLoop:
        loop = running_loop()
        if loop is None:
            raise UsageError(
                "nbagent's magics need a running asyncio loop, as in a Jupyter kernel (ipykernel); "
                "in a script use `await nbagent.open_session(...)` inside asyncio.run()"
            )
        return loop

    def rows(self) -> list[SessionRow]:
        from nbagent import list_sessions

        path = self.path
        if isinstance(path, Path) and not path.exists():
            return []
        return list_sessions(path)

    def current(self) -> Agent | None:
        """The open agent, without opening one."""
        if self.agent is not None and self.agent.closed:
            self.agent = None
        return self.agent

    def ensure(self, *, create: bool = True) -> Agent | None:
        """The open agent; else resume the file's most recent session; else (``create``) open a new one.

        Prints one line saying which session the kernel now uses.
        """
        agent = self.current()
        if agent is not None:
            return agent
        self.loop()
        rows = self.rows()
        if rows:
            return self.resume(rows[0].id, rows=rows, fallback=True)
        if not create:
            return None
        return self.new(announce=True)

    def new(self, *, announce: bool = True) -> Agent:
        """Close the current agent (if any) and open a fresh session in the file."""
        from nbagent import open_session

        self.loop()
        self.close()
        path = self.path
        notebook = notebook_path(self.user_ns, os.environ, Path.cwd())
        self.agent = open_session(path, notebook=str(notebook) if notebook else None)
        if announce:
            print(
                f"nbagent: new session {self.agent.session_id[:8]} in {_shown(path)} (model {self.agent.model.name})"
            )
        return self.agent

    def resume(
        self, session_id: str, *, rows: list[SessionRow] | None = None, fallback: bool = False
    ) -> Agent:
        """Close the current agent and resume ``session_id`` (a unique prefix is enough).

        With ``fallback``, a session held by another process makes a new session instead of an error.
        """
        from nbagent import SessionLockedError, resume_session

        self.loop()
        rows = self.rows() if rows is None else rows
        matches = [r for r in rows if r.id.startswith(session_id)]
        if not matches:
            raise UsageError(f"no session {session_id!r} in {_shown(self.path)}; see %agent sessions")
        if len(matches) > 1:
            raise UsageError(f"{session_id!r} matches {len(matches)} sessions; give more of the id")
        row = matches[0]
        current = self.current()
        if current is not None and current.session_id == row.id:
            print(f"nbagent: session {row.id[:8]} is already the current one")
            return current
        self.close()
        path = self.path
        try:
            agent = resume_session(path, row.id)
        except SessionLockedError as exc:
            if fallback:
                print(f"nbagent: the latest session is in use elsewhere ({exc}); starting a new one")
                return self.new()
            raise UsageError(str(exc)) from None
        self.agent = agent
        after = next((r for r in self.rows() if r.id == row.id), row)
        repaired = (
            " — its last turn was cut off by the kernel stopping and has been closed"
            if after.events > row.events
            else ""
        )
        print(
            f"nbagent: resumed session {row.id[:8]} from {_shown(path)} "
            f"({row.turns} turn{'s' if row.turns != 1 else ''}, last active {when(row.last_activity)}){repaired}"
        )
        return agent

    def close(self) -> None:
        """Close the current agent, waiting for a running turn to stop (it is aborted as ``closed``)."""
        agent = self.current()
        if agent is None:
            return
        for view in self.views:
            view.stop()
        self.views.clear()
        self.agent = None
        if agent.status == "running":
            block_on(agent.close(), self.loop())
        else:
            complete_now(agent.close())  # nothing to wait for: no nested loop needed

    def status_lines(self) -> list[str]:
        agent = self.current()
        path = self.path
        if agent is None:
            return [
                f"no session open · file {_shown(path)} (created by the first %inject, %followup or %steer)"
            ]
        inbox = agent.inbox
        rows = {r.id: r for r in self.rows()}
        row = rows.get(agent.session_id)
        turns = row.turns if row is not None else 0
        return [
            f"status: {agent.status}",
            f"session: {agent.session_id}",
            f"file: {self.shown_path}",
            f"model: {agent.model.name}",
            f"inbox: {len(inbox.next_step)} next-step, {len(inbox.next_turn)} next-turn",
            f"turns: {turns}",
        ]


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it (a URL without credentials)."""
    if isinstance(path, str):
        return redact(path)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
