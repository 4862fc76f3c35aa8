"""The kernel's one agent: opened lazily in the file beside the notebook, resumed after a restart.

The agent lives on the agent loop (:mod:`nbagent.notebook.kernel.agent_loop`); the kernel's main thread
opens, resumes and closes it there and waits with :meth:`MainThread.wait`, which keeps serving the
main thread's work (:mod:`nbagent.notebook.kernel.main_thread`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core.error import UsageError

from nbagent.notebook.kernel.agent_loop import AgentLoop, agent_loop
from nbagent.notebook.kernel.carried_followups import (
    RESTART,
    carried_line,
    cut_short,
    pending_lines,
    still_pending,
)
from nbagent.notebook.kernel.main_thread import MainThread
from nbagent.notebook.kernel.runs import (
    CONTINUE_ENV,
    describe_run,
    find_runner,
    lone_notebook,
    run_identity,
    run_title,
    runner_notebook,
    without_front_end,
)
from nbagent.notebook.kernel.session_file import (
    file_failure,
    notebook_path,
    relative_file,
    session_file,
    shown_store,
)
from nbagent.notebook.kernel.shell_pump import ShellPump
from nbagent.notebook.magics.meter_commands import usage_line
from nbagent.store.location import SqliteLocation, StoreLocation

if TYPE_CHECKING:
    from nbagent.agent import Agent
    from nbagent.log.messages import UserMessage
    from nbagent.notebook.magics.live_turn import LiveTurn
    from nbagent.store.base import SessionRow
    from nbagent.views.schema import SessionRef

T = TypeVar("T")

EXIT_PATIENCE = 3.0
"""Seconds a shutting-down kernel gives its running turn to stop before the process exits (a
kernel manager kills a kernel that has not exited 5 s after the shutdown request)."""

MIN_PREFIX = 4
"""The fewest characters of a session id ``%agent resume``/``--session`` accepts as a prefix."""

GITIGNORE_HINT = (
    "nbagent: for git, the .gitignore line `*.nbagent.sqlite-*` keeps a session's -wal/-shm files out "
    "(add `*.nbagent.sqlite*` to keep the logs out too)"
)
"""Said once, where a session file is first created."""

DELIVERY_PATIENCE = 5.0
"""Seconds a ``%followup``/``%steer`` waits for the agent loop to take its message (see ``deliver``)."""


def when(ms: int | None) -> str:
    """A Unix-ms time as local ``YYYY-MM-DD HH:MM:SS``."""
    if ms is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


class KernelSession:
    """Holds the kernel's agent and the live views of its cells; knows which file they belong in.

    ``agent_loop`` is the loop the agent runs on (``agent_loop.loop``); ``main_thread`` hands work
    from that loop to the kernel's main thread (the user's namespace) and is how the main thread waits.
    """

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.user_ns: dict[str, Any] = shell.user_ns
        self.db_override: str | None = None
        self.agent: Agent | None = None
        self.views: list[LiveTurn] = []
        self.on_open: list[Callable[[Agent], None]] = []
        """Called with every agent opened or resumed, before it is used (the built-in tools equip it)."""
        self.on_open.append(lambda agent: self.place_cassette(agent.model))
        self.delivery_patience = DELIVERY_PATIENCE
        self.in_use_elsewhere: str | None = None
        self.carried: list[UserMessage] = []
        self.carried_from = RESTART
        """Where :attr:`carried` comes from, as ``%agent status`` says it (a restart, a fork…)."""
        """Followups pending when the session was resumed: the next waking magic shows them first."""
        """The latest session's id when ``ensure`` last found it open in another process."""
        self.runner = find_runner()
        """The batch runner that started this kernel (nbconvert, ``jupyter execute``, papermill), if any."""
        self._headless: bool | None = None
        self.agent_loop: AgentLoop = agent_loop()
        kernel = getattr(shell, "kernel", None)
        self.main_thread = MainThread(_kernel_loop(kernel), ShellPump.for_kernel(kernel))
        atexit.register(self._close_at_exit)

    def headless(self) -> bool:
        """Whether this kernel runs without a front end (a batch runner's or a script's nbclient);
        learnt from the first execute request seen (SPEC §9.5)."""
        if self._headless is None:
            kernel = getattr(self.shell, "kernel", None)
            try:
                parent = (
                    kernel.get_parent("shell")
                    if kernel is not None and hasattr(kernel, "get_parent")
                    else None
                )
            except Exception:  # off the main thread, an ipykernel may have no parent to give
                parent = None
            if kernel is None or (isinstance(parent, dict) and parent.get("msg_type") == "execute_request"):
                self._headless = without_front_end(self.shell)
            else:
                return False  # asked off the main thread, before any cell: not known yet
        return self._headless

    def runner_path(self) -> Path | None:
        """The notebook the program that started this kernel executes: the one its command line
        names, or, for a script driving nbclient, the one notebook in the kernel's folder."""
        named = runner_notebook(self.runner)
        if named is None and self.runner is None and self.headless():
            return lone_notebook(Path.cwd())
        return named

    @property
    def path(self) -> StoreLocation:
        return session_file(self.user_ns, override=self.db_override, runner=self.runner_path())

    def session_ref(self, agent: Agent) -> SessionRef:
        """Where ``agent``'s session lives, as a live bundle names it (docs/timeline-json.md): its id
        and its SQLite file relative to the working directory (the notebook's folder under Jupyter);
        ``file`` is ``None`` for PostgreSQL or a file no relative path reaches."""
        return {"id": agent.session_id, "file": relative_file(self.path, Path.cwd())}

    @property
    def shown_path(self) -> str:
        """Where the sessions live, as printed: a URL never shows its password."""
        return self.path.shown

    def place_cassette(self, model: object) -> None:
        """A ``record:``/``replay:`` model's cassette: ``<notebook>.nbagent-cassette.json`` beside the
        notebook (in the working directory when the notebook is not known), unless already chosen."""
        from nbagent.models.cassette import RecordingModel, cassette_beside

        if (
            isinstance(model, RecordingModel)
            and model.cassette is None
            and not os.environ.get("NBAGENT_CASSETTE")
        ):
            notebook = notebook_path(self.user_ns, os.environ, Path.cwd(), self.runner_path())
            model.cassette = cassette_beside(notebook, Path.cwd())

    def wait(
        self,
        future: concurrent.futures.Future[T] | Callable[[], concurrent.futures.Future[T]],
        on_interrupt: Callable[[], None] | None = None,
    ) -> tuple[T, bool]:
        """Block the main thread on ``future`` (see :meth:`MainThread.wait`)."""
        return self.main_thread.wait(future, on_interrupt=on_interrupt)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the agent loop and wait for its result, serving the main thread meanwhile."""
        return self.wait(self.agent_loop.submit(coro))[0]

    def on_agent_loop(self, fn: Callable[[], T]) -> T:
        """Call ``fn`` on the agent loop's thread (opening a session binds it to that loop) and wait."""
        return self.wait(self.agent_loop.call(fn))[0]

    def deliver(self, agent: Agent, verb: str, message: UserMessage) -> None:
        """``agent.followup(message)`` or ``agent.steer(message)``, made on the agent loop's thread.

        There a waking call on an idle agent starts its turn before it returns (SPEC §3.2): when this
        returns, ``turn/start`` and the claim are in the log, so a later ``%inject`` lands in a later
        step, at any pace. If the loop stays busy longer than ``delivery_patience`` seconds (a synchronous tool
        body holding it), the message is delivered from this thread instead: recorded at once, its turn
        opens when the loop is free.
        """
        lock = threading.Lock()
        state = {"started": False, "abandoned": False}

        def on_loop() -> None:
            with lock:
                if state["abandoned"]:
                    return
                state["started"] = True
            getattr(agent, verb)(message)

        future = self.agent_loop.call(on_loop)
        try:
            self.main_thread.wait(future, timeout=self.delivery_patience)
            return
        except concurrent.futures.TimeoutError:
            with lock:
                if not state["started"]:
                    state["abandoned"] = True
        if state["abandoned"]:
            getattr(agent, verb)(message)
        else:
            self.wait(future)

    def wait_idle(self) -> None:
        """Block until the agent is idle (no turn running, nothing waking latched)."""
        agent = self.current()
        if agent is not None:
            self.run(agent.when_idle())

    def rows(self) -> list[SessionRow]:
        """The sessions in the file, newest first (nothing is created: an absent file has none)."""
        from nbagent.store.reading import list_sessions

        path = self.path
        if isinstance(path, SqliteLocation) and not path.path.exists():
            return []
        return self._file_call(path, lambda: list_sessions(path))

    def current(self) -> Agent | None:
        """The open agent, without opening one."""
        if self.agent is not None and self.agent.closed:
            self.agent = None
        return self.agent

    def missing_folder_note(self) -> str:
        """For ``%agent --db PATH``: a warning when PATH's folder does not exist (it is never created)."""
        path = self.path
        if isinstance(path, SqliteLocation) and not path.path.parent.is_dir():
            return f" — its folder {path.path.parent} does not exist, and nbagent creates the file, never folders"
        return ""

    def knows_notebook(self) -> bool:
        """Whether the file was chosen for this notebook (or by the user), not the shared fallback."""
        explicit = self.db_override or os.environ.get("NBAGENT_DB")
        return (
            bool(explicit)
            or notebook_path(self.user_ns, os.environ, Path.cwd(), self.runner_path()) is not None
        )

    def ensure(self, *, create: bool = True) -> Agent | None:
        """The open agent; else the file's most recent session, resumed; else (``create``) a new one.

        Read-only callers (``create=False``) never create anything: a file that is missing or holds no
        session gives ``None``, and so does a latest session in use by another kernel (said in one line
        with the ways out). A writing caller gets that line as a ``UsageError`` instead of a silent fork.
        A kernel that does not know its notebook (the shared ``nbagent.sqlite`` fallback) never resumes
        on its own: that file may hold another notebook's session. A run without a front end starts a
        fresh session, continuing only its own after a kernel restart, unless ``NBAGENT_SESSION=continue``.
        """
        agent = self.current()
        if agent is not None:
            return agent
        known = self.knows_notebook()
        target = self._session_to_continue(known)
        if target is not None:
            from nbagent.errors import SessionLockedError

            rows = self.rows()
            try:
                self.in_use_elsewhere = None
                return self.resume(target.id, rows=rows)
            except SessionLockedError:
                self.in_use_elsewhere = target.id
                line = (
                    f"nbagent: the latest session {target.id[:8]} in {shown_store(self.path)} is in use by another "
                    "kernel; `%agent new` starts another session here, `%agent resume ID` continues an "
                    "earlier one (see `%agent sessions`), `%agent --db PATH` uses another file"
                )
                if create:
                    raise UsageError(line) from None
                print(line)
                return None
        if not create:
            return None
        headless = self.headless()
        agent = self.new(announce=known or headless)
        if not known and not headless:
            print(
                f"nbagent: new session {agent.session_id[:8]} in {shown_store(self.path)}, the shared file of this "
                f"folder (model {agent.model.name}); this kernel does not know its notebook, so it does not continue the file's earlier sessions "
                "(`%agent sessions` lists them, `%agent resume ID` continues one)"
            )
        return agent

    def _session_to_continue(self, known: bool) -> SessionRow | None:
        """The session ``ensure`` resumes: in a run without a front end, this run's own (after a kernel
        restart) or, with ``NBAGENT_SESSION=continue``, the latest; behind a front end the latest of a
        notebook's own file; ``None`` for a fresh session."""
        mode = os.environ.get(CONTINUE_ENV, "").strip()
        if mode not in ("", "continue"):
            raise UsageError(
                f"{CONTINUE_ENV}={mode!r} is not understood: set it to `continue` to continue the latest "
                "session of a batch run, or unset it for a fresh session each run"
            )
        if self.headless() and mode != "continue":
            run = run_identity()
            return next((r for r in self.rows() if (r.metadata.get("run") or {}).get("id") == run), None)
        rows = self.rows() if known else []
        return rows[0] if rows else None

    def new(self, *, announce: bool = True) -> Agent:
        """Close the current agent (if any) and open a fresh session in the file, recording how the
        notebook is run (a run without a front end names its session after the run)."""
        from nbagent.session import open_session

        self.close()
        path = self.path
        if isinstance(path, SqliteLocation) and not path.path.parent.is_dir():
            raise UsageError(file_failure(path, FileNotFoundError(path.path.parent)))
        notebook = notebook_path(self.user_ns, os.environ, Path.cwd(), self.runner_path())
        headless = self.headless()
        how = describe_run(self.runner, headless=headless, user_ns=self.user_ns, environ=os.environ)
        run = {"how": how, "id": run_identity()} if headless else {"how": how}
        title = run_title(how) if headless else None
        first = isinstance(path, SqliteLocation) and not path.path.exists()
        self.agent = self._file_call(
            path,
            lambda: self.on_agent_loop(
                lambda: open_session(
                    path,
                    notebook=str(notebook) if notebook else None,
                    title=title,
                    metadata={"run": run},
                )
            ),
        )
        self._close_before_the_store_at_exit()
        for equip in list(self.on_open):
            equip(self.agent)
        if announce:
            line = f"nbagent: new session {self.agent.session_id[:8]} in {shown_store(path)}"
            if headless and not self.knows_notebook():
                line += (
                    f", the shared file of this folder, for this run of {how} (model {self.agent.model.name}); "
                    "this kernel cannot tell which notebook it runs, so the session is not beside it "
                    "(`%agent --db PATH` chooses the file)"
                )
            elif headless:
                line += (
                    f" for this run of {how} (model {self.agent.model.name}); earlier runs' sessions stay "
                    f"in the file; {CONTINUE_ENV}=continue continues the latest instead"
                )
            else:
                line += f" (model {self.agent.model.name})"
            print(line)
        if first:
            print(GITIGNORE_HINT)
        return self.agent

    def resume(
        self, session_id: str | None, *, rows: list[SessionRow] | None = None, carried_from: str = RESTART
    ) -> Agent:
        """Close the current agent and resume ``session_id`` (a unique prefix of 4 or more characters
        is enough; ``None``: the latest).

        A session held by another process raises ``SessionLockedError`` (``ensure`` words it).
        """
        from nbagent.session import resume_session

        rows = self.rows() if rows is None else rows
        if session_id is None:
            if not rows:
                raise UsageError(
                    f"no session in {shown_store(self.path)} to resume; %inject or %followup starts one"
                )
            session_id = rows[0].id
        if len(session_id) < MIN_PREFIX and not any(r.id == session_id for r in rows):
            raise UsageError(
                f"session id {session_id!r} is too short: give at least {MIN_PREFIX} characters of it "
                "(see %agent sessions)"
            )
        matches = [r for r in rows if r.id.startswith(session_id)]
        if not matches:
            raise UsageError(f"no session {session_id!r} in {shown_store(self.path)}; see %agent sessions")
        if len(matches) > 1:
            raise UsageError(f"{session_id!r} matches {len(matches)} sessions; give more of the id")
        row = matches[0]
        current = self.current()
        if current is not None and current.session_id == row.id:
            print(f"nbagent: session {row.id[:8]} is already the current one")
            return current
        self.close()
        path = self.path
        agent = self._file_call(path, lambda: self.on_agent_loop(lambda: resume_session(path, row.id)))

        def resumed() -> str:
            after = next((r for r in self.rows() if r.id == row.id), row)
            repaired = (
                " — its last turn was cut off by the kernel stopping and has been closed"
                if after.events > row.events
                else ""
            )
            short = cut_short(agent.events) if carried_from == RESTART else None
            cut = f"; turn {short} was cut short by a kernel restart" if short is not None else ""
            return (
                f"nbagent: resumed session {row.id[:8]} from {shown_store(path)} "
                f"({row.turns} turn{'s' if row.turns != 1 else ''}{cut}, last active {when(row.last_activity)})"
                f"{repaired}"
            )

        return self._make_current(agent, carried_from, resumed)

    def adopt(self, agent: Agent, *, carried_from: str, announce: Callable[[], str] | None = None) -> Agent:
        """Make ``agent``, already open (``%agent fork``'s child), the current one without reopening
        it: the current agent is closed as :meth:`close` does, then ``agent`` gets the ``on_open``
        equips and its pending followups are carried as :meth:`resume` carries them."""
        self.close()
        return self._make_current(agent, carried_from, announce)

    def _make_current(self, agent: Agent, carried_from: str, announce: Callable[[], str] | None) -> Agent:
        """``resume``'s and ``adopt``'s tail: equip, make current, say ``announce()`` and what is carried."""
        for equip in list(self.on_open):
            equip(agent)
        self.agent = agent
        self._close_before_the_store_at_exit()
        if announce is not None:
            print(announce())
        self.carried = list(agent.inbox.next_turn)
        self.carried_from = carried_from
        line = carried_line(agent, self.carried, carried_from)
        if line is not None:
            print(line)
        return agent

    def take_carried(self, agent: Agent) -> list[UserMessage]:
        """The carried-over followups still pending, handed once to the waking magic that shows them."""
        carried, self.carried = still_pending(agent, self.carried), []
        return carried

    def _file_call(self, path: StoreLocation, fn: Callable[[], T]) -> T:
        """``fn()``, with a failure of the session store turned into one line naming it and the way
        out (a ``UsageError``); a session in use elsewhere passes through as ``SessionLockedError``.
        The store raises only nbagent's errors (:mod:`nbagent.errors`), whatever its backend."""
        from nbagent.errors import NbagentError, SessionLockedError

        try:
            return fn()
        except SessionLockedError:
            raise
        except NbagentError as exc:
            raise UsageError(file_failure(path, exc)) from None

    def close(self) -> None:
        """Close the current agent, waiting for a running turn to stop (it is aborted as ``closed``)."""
        agent = self.current()
        if agent is None:
            return
        for view in self.views:
            view.stop()
        self.views.clear()
        self.carried = []
        self.agent = None
        self.run(agent.close())

    def dispose(self) -> None:
        """Close the session and forget this holder (``%unload_ext``)."""
        atexit.unregister(self._close_at_exit)
        self.close()

    def _close_before_the_store_at_exit(self) -> None:
        """Have :meth:`_close_at_exit` run before the exit handlers of the store just opened: atexit
        runs the last registered first, and a PostgreSQL store's pools (opened on first use, after
        this holder registered) close at exit; the agent's close needs them to write its turn's end."""
        atexit.unregister(self._close_at_exit)
        atexit.register(self._close_at_exit)

    def _close_at_exit(self) -> None:
        """A kernel shut down (not killed) closes its session: a running turn ends ``aborted`` with
        cause ``closed`` and the lease is released, instead of a repair at the next resume."""
        agent = self.current()
        if agent is None or not self.agent_loop.running:
            return
        try:
            self.agent_loop.submit(agent.close()).result(timeout=EXIT_PATIENCE)
        except Exception:  # the process is going away; resume repairs whatever is left open
            pass

    def read_events(self, session_id: str) -> tuple[Any, ...]:
        """The events of ``session_id`` in the file, read without opening it for writing."""
        from nbagent.store.reading import read_events

        path = self.path
        return self._file_call(path, lambda: read_events(path, session_id))

    def status_lines(self) -> list[str]:
        agent = self.current()
        path = self.path
        if agent is None:
            rows = self.rows()
            if not rows:
                missing = self.missing_folder_note()
                if missing:
                    return [f"no session open · file {shown_store(path)}{missing}"]
                return [
                    f"no session open · file {shown_store(path)} (created by the first %inject, %followup or %steer)"
                ]
            held = f"{len(rows)} session{'s' if len(rows) != 1 else ''}"
            if self.in_use_elsewhere == rows[0].id:
                return [
                    f"no session open in this kernel · file {shown_store(path)} holds {held}; the latest "
                    f"({rows[0].id[:8]}) is open in another kernel"
                ]
            return [f"no session open · file {shown_store(path)} holds {held} (`%agent sessions` lists them)"]
        inbox = agent.inbox
        by_id = {r.id: r for r in self.rows()}
        row = by_id.get(agent.session_id)
        turns = row.turns if row is not None else 0
        return [
            f"status: {agent.status}",
            f"session: {agent.session_id}",
            f"file: {self.shown_path}",
            f"model: {agent.model.name}",
            f"inbox: {len(inbox.next_step)} next-step, {len(inbox.next_turn)} next-turn",
            f"turns: {turns}",
            usage_line(agent),
            *pending_lines(agent, still_pending(agent, self.carried), self.carried_from),
        ]


def _kernel_loop(kernel: Any) -> asyncio.AbstractEventLoop | None:
    """The asyncio loop the kernel's main thread runs between cells (ipykernel's tornado IOLoop)."""
    try:
        return asyncio.get_running_loop()  # loading the extension from a cell: inside that loop
    except RuntimeError:
        pass
    io_loop = getattr(kernel, "io_loop", None)
    return getattr(io_loop, "asyncio_loop", None)


def current_kernel_session() -> KernelSession:
    """The session holder of this kernel's ``%load_ext nbagent`` (see :mod:`nbagent.notebook`)."""
    from IPython import get_ipython

    shell = get_ipython()
    magics = shell.magics_manager.registry.get("AgentMagics") if shell is not None else None
    if magics is None:
        raise RuntimeError("run `%load_ext nbagent` first")
    return magics.session
