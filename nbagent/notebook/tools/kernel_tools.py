"""The built-in notebook tools (SPEC §9.4): the model looks into the kernel, and runs code if allowed.

================== ========================== ==========================================================
tool               arguments                  does
================== ========================== ==========================================================
``list_variables`` —                          the user's variables: name, type, shape/len, preview
``describe_variable`` ``name: str``           a DataFrame's §9.3 summary (as ``%inject``), else a preview
``recent_cells``   ``count: int = 5``         the last cells' ``In[n]`` source and result or error
``run_code``       ``code: str``              runs in the user's namespace (needs approval)
``read_notebook``  ``include_outputs=True``   the notebook's cells (see ``notebook_reader``)
``propose_cell``   ``code: str, note=""``     a cell for the user to insert (see ``proposals``)
================== ========================== ==========================================================

Everything that touches the user's namespace runs on the kernel's main thread (SPEC §9.0), handed
over by ``on_main`` (the kernel session's :class:`~nbagent.notebook.kernel.main_thread.MainThread`). Each body catches its
own failures, so an exception inside a tool becomes an error result and never reaches a cell.

Notebook sessions get these tools and an :class:`~nbagent.notebook.tools.approvals.Approvals` approver
from :class:`NotebookTools`; a plain ``open_session`` agent gets them only when asked::

    agent = nbagent.open_session(path, tools=kernel_tools(get_ipython()))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from nbagent.core.tools import Tool, ToolResult
from nbagent.core.tools import tool as make_tool
from nbagent.notebook.tools.approval_prompts import ApprovalPrompts
from nbagent.notebook.tools.approvals import Approvals
from nbagent.notebook.tools.cell_history import CellHistory
from nbagent.notebook.tools.code_runner import run_code as run_in_namespace
from nbagent.notebook.tools.front_end_cells import front_end_inserts
from nbagent.notebook.tools.namespace_view import (
    UnknownVariable,
    describe_text,
    list_variables_text,
    shown_safely,
)
from nbagent.notebook.tools.notebook_reader import read_notebook_tool
from nbagent.notebook.tools.proposals import FrontEndInserts, propose_cell_tool

if TYPE_CHECKING:
    from nbagent.agent import Agent

T = TypeVar("T")
OnMain = Callable[[Callable[[], T]], Awaitable[T]]

TOOL_NAMES = (
    "list_variables",
    "describe_variable",
    "recent_cells",
    "run_code",
    "read_notebook",
    "propose_cell",
)


def _default_on_main() -> OnMain[Any]:
    """The kernel session's hand-over to the main thread, or a new one bound to the running loop."""
    from nbagent.notebook.kernel.kernel_session import current_kernel_session
    from nbagent.notebook.kernel.main_thread import MainThread

    try:
        return current_kernel_session().main_thread.call
    except RuntimeError:  # the extension is not loaded
        import asyncio

        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        return MainThread(loop).call


def _guarded(fn: Callable[[], str]) -> Callable[[], ToolResult]:
    """``fn``'s text as a result; its exception as an error result the model can read."""

    def run() -> ToolResult:
        try:
            return ToolResult(fn())
        except UnknownVariable as exc:
            return ToolResult(f"Error: {exc}", is_error=True, code="UNKNOWN_VARIABLE")
        except Exception as exc:
            return ToolResult(f"Error: {type(exc).__name__}: {exc}", is_error=True, code="TOOL_ERROR")

    return run


class KernelTools:
    """The built-in tools bound to one IPython shell; ``history.listen()`` makes ``recent_cells`` see errors."""

    def __init__(self, shell: Any, *, on_main: OnMain[Any]) -> None:
        self.shell = shell
        self.history = CellHistory(shell)
        self._on_main = on_main
        self.front_end = FrontEndInserts(
            front_end_inserts if getattr(shell, "kernel", None) is not None else None
        )
        """Whether the front end inserts proposed cells itself (learned at the first proposal)."""
        self.tools: tuple[Tool, ...] = self._build()

    def _build(self) -> tuple[Tool, ...]:
        shell, on_main = self.shell, self._on_main

        async def list_variables() -> ToolResult:
            """List the variables in the user's notebook kernel: name, type, shape or length, and a
            one-line preview of each (private names, modules and IPython's own names left out)."""
            return await on_main(_guarded(lambda: list_variables_text(shell.user_ns, shell.user_ns_hidden)))

        async def describe_variable(name: str) -> ToolResult:
            """Describe one variable of the user's notebook kernel: a DataFrame gets a summary of its
            columns (dtype, nulls, distinct values, statistics, samples) and head rows; a lazy frame
            (Dask, DuckDB, Ibis, polars LazyFrame) its schema and partitions, never computed; anything
            else a bounded preview of its value.

            Args:
                name: the variable's name, as listed by list_variables
            """
            return await on_main(_guarded(lambda: describe_text(shell.user_ns, shell.user_ns_hidden, name)))

        async def recent_cells(count: int = 5) -> ToolResult:
            """Show the last cells the user ran in the notebook: each cell's In[n] source and the
            text of its result or error (secret-shaped strings hidden).

            Args:
                count: how many of the most recent cells (1 to 20)
            """
            return await on_main(_guarded(lambda: shown_safely(self.history.recent(count))))

        async def run_code(code: str, signal: Any) -> ToolResult:
            """Run Python code in the user's notebook kernel, in the user's namespace (the user
            approves each call). Returns stdout, stderr, the value of a final expression and any
            error; names the code defines stay for the user.

            Args:
                code: Python source, as in a notebook cell
            """

            def body() -> ToolResult:
                if signal.cancelled:
                    return ToolResult("Error: not run: the turn was cancelled", is_error=True, code="ABORTED")
                report = run_in_namespace(code, shell.user_ns, transform=shell.transform_cell)
                failed = report.error is not None
                return ToolResult(report.text(), is_error=failed, code="CODE_ERROR" if failed else None)

            return await on_main(body)

        return (
            make_tool(list_variables, parallel_safe=True),
            make_tool(describe_variable, parallel_safe=True),
            make_tool(recent_cells, parallel_safe=True),
            make_tool(run_code, requires_approval=True),
            read_notebook_tool(shell),
            propose_cell_tool(self.front_end),
        )


def kernel_tools(shell: Any, *, on_main: OnMain[Any] | None = None) -> tuple[Tool, ...]:
    """The built-in tools for ``shell`` (``get_ipython()``), for a plain ``open_session`` agent.

    ``on_main`` hands a callable to the kernel's main thread; by default the kernel session's
    (``%load_ext nbagent``), else one served by the loop running now. Errors of later cells are
    recorded for ``recent_cells`` from now on (a ``post_run_cell`` listener).
    """
    bound = KernelTools(shell, on_main=on_main or _default_on_main())
    bound.history.listen()
    return bound.tools


class NotebookTools:
    """What the magics equip every notebook session with: the built-in tools (unless turned off with
    ``%agent tools off``) and an :class:`Approvals` approver that asks in the notebook."""

    def __init__(self, shell: Any, *, on_main: OnMain[Any]) -> None:
        self.shell = shell
        self.kernel = KernelTools(shell, on_main=on_main)
        self.enabled = True
        self.prompts = ApprovalPrompts()
        self.kernel.history.listen()

    def close(self) -> None:
        """Stop following cells (``%unload_ext``)."""
        self.kernel.history.unlisten()

    def equip(self, agent: Agent) -> None:
        """Give a freshly opened or resumed agent the tools (if enabled) and an approval desk."""
        if self.enabled:
            self.set_enabled(agent, True)
        desk = Approvals(agent)
        agent.approver = desk
        self.prompts.attach(agent, desk)

    def set_enabled(self, agent: Agent | None, on: bool) -> list[str]:
        """Offer (or withdraw) the built-ins from the next request on; returns the names changed."""
        self.enabled = on
        if agent is None:
            return []
        changed = []
        for t in self.kernel.tools:
            if on and t.name not in agent.tools:
                agent.add_tool(t)
                changed.append(t.name)
            elif not on and agent.tools.get(t.name) is t:
                del agent.tools[t.name]
                changed.append(t.name)
        return changed


def desk_of(agent: Agent) -> Approvals | None:
    """The agent's notebook approval desk, or ``None`` when ``agent.approver`` is something else."""
    approver = agent.approver
    return approver if isinstance(approver, Approvals) else None
