"""``propose_cell`` (SPEC §9.7): the model leaves the user a code cell to insert, and hears what they did.

The tool changes nothing by itself (no approval): the call and its result are the proposal, kept in
the log; every view shows it under its turn (:mod:`nbagent.views.proposals`), and in JupyterLab and
Notebook 7 the lab extension inserts it below the cell that started the turn when the user clicks
Insert below or Insert and run. The extension then tells the kernel on the comm target
:data:`TARGET`, and the click becomes context, never a turn: an ``inject()`` of a message whose source
is ``{"kind": "notebook", "action": "inserted" | "inserted-and-ran", "proposal": ID, "cell"?}``
(SPEC §2.3), which the model reads at its next boundary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nbagent.core.tools import Tool, ToolResult
from nbagent.core.tools import tool as make_tool
from nbagent.log.messages import UserMessage
from nbagent.notebook.kernel.comm_target import CommTarget
from nbagent.views.proposals import PROPOSE_CELL, next_proposal_id
from nbagent.views.text import plural

if TYPE_CHECKING:
    from nbagent.agent import Agent

log = logging.getLogger("nbagent.notebook")

TARGET = "nbagent.proposals"
"""The comm target the lab extension opens to say what the user did with a proposal."""
CODE_CHARS = 20_000
"""Characters of a proposed cell at most (a longer one is refused, never cut: it would not run)."""
ACTIONS = {"inserted": "inserted", "inserted-and-ran": "inserted and ran"}


@dataclass
class FrontEndInserts:
    """Whether this kernel's front end inserts proposed cells itself (nbagent's lab extension says so
    when ``ask`` asks it: see :func:`nbagent.notebook.tools.front_end_cells.front_end_inserts`). Asked at each
    proposal until it says yes; elsewhere a ``--wait`` cell sets the proposal as the next input."""

    ask: Callable[[], bool] | None = None
    known: bool = False

    def learn(self) -> bool:
        if not self.known and self.ask is not None:
            self.known = self.ask()
        return self.known


def propose_cell_tool(front_end: FrontEndInserts | None = None) -> Tool:
    """The ``propose_cell`` tool (async: it only answers, on the agent's loop); with ``front_end``, each
    proposal first learns whether the front end inserts cells itself (in a worker thread)."""

    async def propose_cell(code: str, note: str = "") -> ToolResult:
        """Propose a code cell to the user: it is shown under this turn in the notebook with Insert
        below, Insert and run and Copy. Nothing runs and nothing is inserted until the user decides;
        when they insert it you are told at your next step (a notebook note naming the proposal).

        Args:
            code: the cell's Python source, complete and runnable as it stands
            note: one line for the user: what the cell does or why
        """
        if not code.strip():
            return ToolResult("Error: the proposed cell is empty", is_error=True, code="INVALID_ARGUMENTS")
        if len(code) > CODE_CHARS:
            return ToolResult(
                f"Error: the proposed cell has {len(code):,} characters; at most {CODE_CHARS:,} are shown "
                "to the user: propose a shorter cell",
                is_error=True,
                code="INVALID_ARGUMENTS",
            )
        pid = _current_proposal_id()
        if front_end is not None:
            await asyncio.to_thread(front_end.learn)
        named = f"cell {pid}" if pid else "a cell"
        return ToolResult(
            f"Proposed {named} to the user ({plural(len(code.splitlines()) or 1, 'line')}); it is shown under this "
            "turn with Insert below, Insert and run and Copy. Nothing has run: the user decides. If they "
            f"insert it, a notebook note naming proposal {pid or 'this proposal'} reaches you at your next step."
        )

    return make_tool(propose_cell, name=PROPOSE_CELL)


def offer_next_input(shell: Any, proposals: list[str], front_end: FrontEndInserts) -> bool:
    """After a ``--wait`` cell whose turn proposed ``proposals`` (their code): when the front end does
    not insert proposed cells itself, the last one becomes the next input (IPython's
    ``set_next_input``: a new cell below in Jupyter front ends that honour it, the next prompt in a
    terminal). Returns whether it did."""
    if not proposals or front_end.known:
        return False
    shell.set_next_input(proposals[-1], replace=False)
    return True


def _current_proposal_id() -> str | None:
    """This call's proposal id, counted from the running agent's log (its call is logged already)."""
    from nbagent.core.agent import in_driver

    agent = in_driver.get()
    if agent is None:
        return None
    try:
        return next_proposal_id(agent.events)
    except Exception:  # an id is a convenience; the proposal stands without one
        log.warning("nbagent could not number a proposal", exc_info=True)
        return None


def note_message(data: Mapping[str, Any]) -> UserMessage:
    """The context message for what the front end said the user did (``ValueError`` when it is not a
    proposal action): ``{"action", "proposal", "cell"?: {cell_id, ...}, "below"?: {execution_count}}``."""
    action, pid = data.get("action"), data.get("proposal")
    if action not in ACTIONS:
        raise ValueError(f"unknown proposal action {action!r} (expected one of {', '.join(ACTIONS)})")
    if not isinstance(pid, str) or not pid or len(pid) > 40:
        raise ValueError(f"a proposal action names its proposal by id, got {pid!r}")
    source: dict[str, Any] = {"kind": "notebook", "action": action, "proposal": pid}
    cell = data.get("cell")
    if isinstance(cell, Mapping) and isinstance(cell.get("cell_id"), str):
        source["cell"] = {"cell_id": cell["cell_id"][:100]}
    below = data.get("below")
    count = below.get("execution_count") if isinstance(below, Mapping) else None
    if type(count) is int and 0 <= count < 1 << 31:
        source["below"] = count  # the views say where it went
    else:
        count = None
    where = f" below In[{count}]" if isinstance(count, int) else " into the notebook"
    text = f"[notebook] The user {ACTIONS[action]} your proposed cell {pid}{where}."
    if action == "inserted-and-ran":
        text += " Its output is in the notebook (read_notebook or recent_cells shows it once it has run)."
    else:
        text += " It has not run yet."
    return UserMessage.text(text, source)  # type: ignore[arg-type]


class ProposalActions(CommTarget):
    """Listens on :data:`TARGET` in this kernel and injects each action into the current agent."""

    target = TARGET

    def __init__(
        self,
        agent: Callable[[], Agent | None],
        manager: Any = None,
        on_told: Callable[[Agent, str, UserMessage], None] | None = None,
    ) -> None:
        """``on_told(agent, proposal id, message)`` runs after each action is recorded (the magics
        update the output of the turn that proposed the cell)."""
        super().__init__(manager)
        self._agent = agent
        self._on_told = on_told

    def act(self, data: Any) -> str:
        """Inject what ``data`` says the user did; returns the sentence the front end shows."""
        if not isinstance(data, Mapping):
            return "ignored: a proposal action is a JSON object"
        agent = self._agent()
        if agent is None or agent.closed:
            return "ignored: no agent session is open in this kernel"
        try:
            message = note_message(data)
        except ValueError as exc:
            return f"ignored: {exc}"
        agent.inject(message)
        if self._on_told is not None:
            try:
                self._on_told(agent, str(data["proposal"]), message)
            except Exception:  # the action is recorded; only its echo in the old output is lost
                log.warning("nbagent could not show a proposal's action in its turn's output", exc_info=True)
        return f"told the agent: {message.plain_text}"

    def _opened(self, comm: Any, msg: Mapping[str, Any]) -> None:
        try:
            said = self.act(msg.get("content", {}).get("data"))
        except Exception as exc:  # never raised into the kernel's comm handling
            log.warning("nbagent proposal action failed: %s", exc)
            said = f"could not tell the agent: {exc}"
        try:
            comm.send({"said": said})
            comm.close()
        except Exception:
            pass
