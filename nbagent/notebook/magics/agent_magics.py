"""The ``%inject``, ``%followup``, ``%steer`` and ``%agent`` magics (SPEC §9.1).

Each verb is a line magic and a cell magic (``%%verb`` takes the cell body as text). Options come
first on the line and are parsed with IPython's ``magic_arguments`` (so ``%inject?`` shows help);
the rest of the line is taken verbatim.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from nbagent.notebook.kernel.cell_events import CellEvents
from nbagent.notebook.kernel.kernel_session import KernelSession, when
from nbagent.notebook.kernel.runs import how_run
from nbagent.notebook.kernel.whatif_comm import WhatIfComms
from nbagent.notebook.magics import fork_commands, mcp_commands, meter_commands, tool_commands
from nbagent.notebook.magics.arguments import check_agent_arguments, pick_options, split_options
from nbagent.notebook.magics.help import (
    RunFailedError,
    asks_for_help,
    cancelled_by_interrupt,
    missing_module,
    missing_sdk,
    show_help,
)
from nbagent.notebook.magics.injection import (
    DEFAULT_BUDGET,
    InjectOptions,
    LastError,
    build_injection,
    describe,
    dropped_note,
    inject_usage,
)
from nbagent.notebook.tools.kernel_tools import NotebookTools
from nbagent.notebook.tools.proposals import ProposalActions, offer_next_input
from nbagent.views.text import plural

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from nbagent.log.messages import CellRef

KEEP_PROPOSING = 64
"""Finished turn views kept so a later click on one of their proposed cells updates them."""
_COMMANDS: tuple[str, ...] = ("status", "new", "resume", "sessions", "model", "show", "cancel", "wait")
_COMMANDS += ("transcript", "close")
_COMMANDS += ("run",)  # starts what is pending (a followup carried over a restart): agent.wake()
_COMMANDS += ("approve", "deny", "tools", "approvals")  # nbagent.notebook.magics.tool_commands
_COMMANDS += ("mcp",)  # nbagent.notebook.magics.mcp_commands
_COMMANDS += ("context", "context-limit")  # nbagent.notebook.magics.meter_commands
_COMMANDS += fork_commands.COMMANDS  # fork, replay, diff

Magic = TypeVar("Magic", bound=Callable[..., Any])


def running_cell_number(shell: Any, stored: bool) -> int:
    """The ``In [n]`` number of the cell running now (``stored``: the cell goes into the history).

    IPython 9 advances ``shell.execution_count`` as a cell starts, IPython 8 as it ends; the input
    history receives a stored cell before its code runs in both, so its length says the number. A cell
    kept out of the history has no number of its own and advances nothing.
    """
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if stored and history:
        return len(history) - 1
    return int(shell.execution_count)


def _parse(method: Callable[..., Any], options: str) -> Any:
    try:
        return parse_argstring(method, options)
    except UsageError:
        raise
    except SystemExit as exc:  # argparse on bad input
        raise UsageError(str(exc)) from None


def cassette_note(model: object) -> str:
    """For a ``record:``/``replay:`` model: which cassette it uses and what its mode does."""
    from nbagent.models.cassette import MODE_DOES, RecordingModel

    if not isinstance(model, RecordingModel) or model.cassette is None:
        return ""
    return f", with the cassette {model.cassette.name} (mode {model.mode}: {MODE_DOES[model.mode]})"


def _message_magic(verb: str) -> Callable[[Magic], Magic]:
    """``%verb``/``%%verb`` delivering a message: its ``--wait`` option and its text (the line's, or
    the cell body's)."""

    def decorate(method: Magic) -> Magic:
        method = line_cell_magic(method)
        method = argument("text", nargs="*", help=f"your message (or the cell body of %%{verb})")(method)
        method = argument("--wait", action="store_true", help="block the cell until the run ends")(method)
        return magic_arguments()(method)

    return decorate


@magics_class
class AgentMagics(Magics):
    """The kernel's agent session, driven from cells."""

    shell: InteractiveShell  # type: ignore[assignment]  # IPython's Magics says `shell = None`, unannotated

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.session = KernelSession(shell)
        self.tools = NotebookTools(shell, on_main=self.session.main_thread.call)
        self.session.on_open.append(self.tools.equip)
        self.mcp = mcp_commands.NotebookMcp()
        self.session.on_open.append(self.mcp.equip)
        # Clicks on proposed cells: recorded as context, and shown in the turn's output.
        self.proposals = ProposalActions(self.session.current, on_told=self._proposal_told)
        self._proposing: dict[tuple[str, str], Any] = {}
        """(session id, proposal id) -> the finished turn view that shows that proposal."""
        self.proposals.listen()
        self.whatif = WhatIfComms(self.session.current)  # the session tab's replays, run here
        self.whatif.listen()
        self.last_error: LastError | None = None
        self._shown_error: BaseException | None = getattr(sys, "last_value", None)
        """IPython's last shown error (``sys.last_value``) when last looked at: only later ones count."""
        self._cell_id: str | None = None
        self._stored = False
        self._cells = CellEvents(shell, pre=self._pre_run_cell, post=self._post_run_cell)
        self._cells.listen()

    def unload(self) -> None:
        """Stop listening to the shell and close the session (``%unload_ext``)."""
        self._cells.unlisten()
        self.tools.close()
        self.proposals.close()
        self.whatif.close()
        self.session.dispose()

    # -- shell events -----------------------------------------------------------------------------

    def _pre_run_cell(self, info: Any) -> None:
        self._cell_id = getattr(info, "cell_id", None)
        self._stored = bool(getattr(info, "store_history", False))

    def _post_run_cell(self, result: Any) -> None:
        exc = result.error_in_exec or result.error_before_exec
        if exc is None or isinstance(exc, (UsageError, RunFailedError)):
            return
        self._shown_error = exc
        self.last_error = LastError.of(exc)

    def _last_error(self) -> LastError | None:
        """The last error a cell raised, or that IPython showed since (``sys.last_value``, what ``%debug``
        uses: a cell that caught an error and called ``showtraceback()``)."""
        shown = getattr(sys, "last_value", None)
        if shown is not None and shown is not self._shown_error:
            self._shown_error = shown
            if not isinstance(shown, (UsageError, RunFailedError, KeyboardInterrupt)):
                self.last_error = LastError.of(shown)
        return self.last_error

    def _cell(self) -> CellRef:
        cell: CellRef = {"execution_count": running_cell_number(self.shell, self._stored)}
        if self._cell_id:
            cell["cell_id"] = self._cell_id
        return cell

    # -- %inject ----------------------------------------------------------------------------------

    @magic_arguments()
    @argument("--label", help="a label for what is queued, shown in the timeline and transcript")
    @argument("--rows", type=int, help="head rows in a DataFrame summary (default 5)")
    @argument("--schema-only", action="store_true", help="a DataFrame's columns and dtypes only")
    @argument("--budget", type=int, help="a DataFrame summary's token budget (default 1500)")
    @argument(
        "--last-error",
        action="store_true",
        help="the error being handled (inside `except:`), else the last error a cell raised or showed",
    )
    @argument("text", nargs="*", help="an expression (a DataFrame or any object) or literal text")
    @line_cell_magic
    def inject(self, line: str, cell: str | None = None) -> None:
        """Queue context for the model's next step without running the model.

        How the line is read: it is evaluated when it is a Python expression whose names all exist
        in the kernel (`%inject df` summarizes a pandas/polars DataFrame, `%inject df.describe()` sends
        that frame, `%inject obj` previews any other object). A single unknown name, alone or with
        `.attr`, `(…)` or `[…]` after it (`%inject revnue`, `%inject dff.head()`), is an error that
        suggests close names: a typo is likelier than one word of context. An unfinished expression
        (`df.head(`) is refused. Anything else is queued as text, verbatim, and the receipt says
        "as text" (`%inject prices in EUR`, `%inject not important`).
        Options may stand anywhere on the line (`%inject df --rows 3`); text that contains `--`
        goes after a leading `--` (`%inject -- a --b c`) or in a `%%inject` cell, whose body is
        always text. With `--label L` an unknown name is
        text too.
        """
        options, text = pick_options(line, {"--label", "--rows", "--budget"})
        if asks_for_help(options, text if cell is None else ""):
            show_help(self.inject)
            return
        self._settle()
        try:
            args = _parse(self.inject, options)
        except UsageError as exc:
            raise UsageError(inject_usage(str(exc), text)) from None
        if cell is not None and text:
            raise UsageError("%%inject takes options on its line and the text in the cell body")
        opts = InjectOptions(args.label, args.rows, args.schema_only, args.last_error, args.budget)
        if opts.rows is not None and opts.rows < 0:
            raise UsageError("--rows must be 0 or more")
        handled = sys.exc_info()[1]  # inside `except:`, --last-error means the error being handled
        injection = build_injection(
            cell if cell is not None else text,
            opts,
            evaluate=lambda expr: self.shell.ev(expr),
            names=self._names,
            user_names=self._user_names,
            last_error=LastError.of(handled) if handled is not None else self._last_error(),
            cell=self._cell(),
            literal=cell is not None,
        )
        message = injection.message
        agent = self.session.ensure()
        assert agent is not None
        agent.inject(message)
        from nbagent.core.estimate import content_tokens, model_counter

        body = message.plain_text
        tokens = content_tokens(message.content, model_counter(agent.model))  # as the meter counts it
        pending = len(agent.inbox.next_step) + len(agent.inbox.next_turn)
        when_seen = (
            "the running turn reads it at its next step"
            if agent.status == "running"
            else "the model has not run; %followup or %steer sends it with your next message"
        )
        as_text = f" · as text ({injection.as_text})" if injection.as_text else ""
        dropped = dropped_note(message, opts.budget or DEFAULT_BUDGET)
        print(
            f"queued {describe(message)}: {len(body):,} chars, ~{tokens:,} tokens{as_text}"
            f"{dropped} · inbox {pending} pending · {when_seen}"
        )

    def _names(self) -> list[str]:
        """The names an `%inject` expression may use: the user's namespace and the builtins."""
        import builtins

        return [*self.shell.user_ns, *self.shell.user_global_ns, *vars(builtins)]

    def _user_names(self) -> list[str]:
        """The user's own variables (not IPython's ``In``, ``Out``, ``_i1``…), for close matches."""
        hidden = getattr(self.shell, "user_ns_hidden", {})
        return [n for n in self.shell.user_ns if not n.startswith("_") and n not in hidden]

    # -- %followup and %steer ---------------------------------------------------------------------

    @_message_magic("followup")
    def followup(self, line: str, cell: str | None = None) -> None:
        """Send a message as its own turn; the turn shows live in this cell's output."""
        self._deliver("followup", self.followup, line, cell)

    @_message_magic("steer")
    def steer(self, line: str, cell: str | None = None) -> None:
        """Send a message to the running turn's next step (a new turn when idle)."""
        self._deliver("steer", self.steer, line, cell)

    def _deliver(self, verb: str, method: Callable[..., Any], line: str, cell: str | None) -> None:
        from nbagent.log.messages import UserMessage
        from nbagent.notebook.magics.live_turn import DisplaySurface, LiveTurn

        options, text = split_options(line, (), trailing=("--wait",))
        if asks_for_help(options, text if cell is None else ""):
            show_help(method)
            return
        self._settle()
        args = _parse(method, options)
        if cell is not None:
            if text:
                raise UsageError(f"%%{verb} takes options on its line and the message in the cell body")
            text = cell.strip("\n")
        if not text.strip():
            raise UsageError(f"%{verb} needs a message")
        agent = self.session.ensure()
        assert agent is not None
        self._show_carried(agent)
        message = UserMessage.text(text, source={"kind": "user", "cell": self._cell()})
        view = LiveTurn(
            agent,
            message,
            verb,
            DisplaySurface(),
            on_final=self.forget_view,
            waited=args.wait,
            session=self.session.session_ref(agent),
        )
        view.start()
        self.tools.prompts.reserve(view)
        self.session.views.append(view)
        if not args.wait:
            self.session.deliver(agent, verb, message)
            view.refresh()  # an idle agent's turn has started: show its number at once
            return
        run, interrupted = self.session.wait(
            lambda: self.session.agent_loop.submit(agent.run(message, steer=verb == "steer")),
            on_interrupt=lambda: agent.cancel("interrupt"),
        )
        view.refresh()
        offer_next_input(
            self.shell, view.proposals(), self.tools.kernel.front_end
        )  # Copy's partner elsewhere
        if interrupted:
            raise cancelled_by_interrupt(f"the turn was cancelled ({run.outcome})") from None
        if run.outcome == "error":
            raise RunFailedError.from_run(run)

    def _show_carried(self, agent: Any) -> list[Any]:
        """Give each followup carried over a restart a live view in this cell, before it runs here."""
        from nbagent.notebook.kernel.carried_followups import quoted
        from nbagent.notebook.magics.live_turn import DisplaySurface, LiveTurn

        views = []
        for message in self.session.take_carried(agent):
            since = self.session.carried_from
            print(f"nbagent: runs first, in this cell: followup {quoted(message)} ({since})")
            view = LiveTurn(
                agent,
                message,
                "followup",
                DisplaySurface(),
                on_final=self.forget_view,
                session=self.session.session_ref(agent),
            )
            view.start()
            self.tools.prompts.reserve(view)
            self.session.views.append(view)
            views.append(view)
        return views

    def _settle(self) -> None:
        """Re-publish views that became final while no cell ran, so every front end has the end."""
        for view in list(self.session.views):
            if view.final:
                view.refresh()

    def forget_view(self, view: Any) -> None:
        if view in self.session.views:
            self.session.views.remove(view)
        for pid in view.proposal_ids():  # kept: a later click on one of them updates this output
            self._proposing[(view.agent.session_id, pid)] = view
        while len(self._proposing) > KEEP_PROPOSING:
            del self._proposing[next(iter(self._proposing))]

    def _proposal_told(self, agent: Any, pid: str, message: Any) -> None:
        """Show a click on proposal ``pid`` in the output of the finished turn that proposed it (a
        turn still running folds the click's splice itself)."""
        kept = self._proposing.get((agent.session_id, pid))
        finished = [v for v in self.session.views if v.agent is agent and v.final and pid in v.proposal_ids()]
        for view in [kept] if kept is not None and kept.agent is agent else finished[:1]:
            view.show_told(message)

    # -- %agent -----------------------------------------------------------------------------------

    @magic_arguments()
    @argument("--db", help="use this session file (instead of the one beside the notebook)")
    @argument("--keep-inbox", action="store_true", help="with `cancel`: keep pending messages")
    @argument("command", nargs="?", help=" | ".join(_COMMANDS) + " (default: status)")
    @argument(
        "value",
        nargs="*",
        help="the session id for `resume`, the model for `model`, on|off for `tools`, ask|session for "
        "`approvals`, warn|block for `context-limit`",
    )
    @line_cell_magic
    def agent(self, line: str, cell: str | None = None) -> None:
        """Inspect and control the kernel's agent session.

        status · new · resume [ID] · sessions · model M · show · cancel [--keep-inbox] · wait ·
        transcript · close · approve|deny [ID] · tools [on|off] · approvals [ask|session|read-only] ·
        mcp add NAME -- COMMAND ARGS… | mcp add NAME URL | mcp load PATH | mcp list | mcp remove NAME · run ·
        context (the next request's tokens by source) · context-limit warn|block ·
        fork --before-turn N|--at SEQ · replay N [--drop ID…] [--move ID=N…] [--add N TEXT] [--wait] (--help) ·
        diff [S:]TURN [S:]TURN · why N [--yes] (--help).
        `%%agent` runs one command per line of its body.

        After a kernel restart the first magic says which followups were left pending; they do not
        start on their own: the next `%followup`, `%steer` or `%agent run` starts them first, each
        with its live view and approval prompts in that cell. `%agent run` starts a turn for what is
        pending without sending anything (`agent.wake()`); `%agent status` lists what runs and what
        is pending.
        """
        if cell is not None:
            if line.strip():
                self._agent_command(line)
            for command in cell.splitlines():
                if command.strip():
                    self._agent_command(command)
            return
        self._agent_command(line)

    def _agent_command(self, line: str) -> None:
        head, _, rest = line.strip().partition(" ")
        if asks_for_help(line, line) and head not in fork_commands.OWN_HELP:
            show_help(self.agent)
            return
        self._settle()
        if head == "mcp":  # its own words (`-- COMMAND ARGS…`) are not %agent options
            mcp_commands.command(self.session, self.mcp, rest)
            return
        if head in fork_commands.COMMANDS:  # fork, replay, diff, why (SPEC §11.4, §11.5)
            fork_commands.command(self, head, rest)
            return
        args = _parse(self.agent, line)
        if args.db:
            if self.session.db_override != args.db:
                self.session.close()
            self.session.db_override = args.db
            if not args.command:
                print(f"nbagent: using {self.session.shown_path}{self.session.missing_folder_note()}")
                return
        command = args.command or "status"
        check_agent_arguments(command, args.value, args.keep_inbox, _COMMANDS)
        getattr(self, f"_agent_{command.replace('-', '_')}")(*args.value, keep_inbox=args.keep_inbox)

    def _agent_status(self, *, keep_inbox: bool) -> None:
        self.session.ensure(create=False)
        print("\n".join(self.session.status_lines()))

    def _agent_new(self, *, keep_inbox: bool) -> None:
        self.session.new()

    def _agent_resume(self, session_id: str | None = None, *, keep_inbox: bool) -> None:
        self.session.resume(session_id, carried_from="from when it was last open")

    def _agent_sessions(self, *, keep_inbox: bool) -> None:
        rows = self.session.rows()
        if not rows:
            print(f"no sessions in {self.session.shown_path}")
            return
        current = self.session.current()
        print(f"sessions in {self.session.shown_path} (most recent first):")
        for row in rows:
            mark = "*" if current is not None and current.session_id == row.id else " "
            title = f" · {row.title}" if row.title else ""
            title += f" · fork of {row.parent[:8]}" if row.parent else ""
            if not row.title and row.metadata.get("run"):
                title += f" · {how_run(row.metadata)}"
            print(
                f"{mark} {row.id[:8]}  {plural(row.turns, 'turn'):>9}  {plural(row.events, 'event'):>11}  "
                f"last {when(row.last_activity)}  {row.model or '?'}{title}"
            )

    def _agent_model(self, model: str, *, keep_inbox: bool) -> None:
        from nbagent.errors import NbagentError
        from nbagent.models import resolve_model
        from nbagent.redaction import scrub

        try:
            resolved = resolve_model(model)
        except (NbagentError, TypeError, ValueError, ImportError) as exc:
            raise UsageError(f"cannot use model {scrub(model)!r}: {scrub(str(exc))}") from None
        sdk = missing_sdk(resolved)
        if sdk is not None:
            raise UsageError(
                f"model {scrub(model)!r} needs the {sdk} package, which is not installed: "
                'pip install "nbagent[providers]"; the model was not changed'
            )
        agent = self.session.ensure()
        assert agent is not None
        self.session.place_cassette(resolved)
        agent.set_model(resolved)
        print(f"nbagent: later turns use {agent.model.name}{cassette_note(resolved)}")

    def _agent_show(self, *, keep_inbox: bool) -> None:
        try:
            from nbagent import widgets
        except ImportError as exc:
            raise UsageError(
                f"the nbagent widgets need {missing_module(exc)}, which is not installed: "
                f'pip install "nbagent[notebook]" (or use %agent transcript)'
            ) from None
        agent = self.session.ensure(create=False)
        if agent is None and self.session.in_use_elsewhere is None:
            self._show_before_session(widgets)
            return
        if agent is not None:
            widgets.show(agent)

    def _show_before_session(self, widgets: Any) -> None:
        """``%agent show`` as the first magic: empty widgets now, filled by the session the first
        delivery opens (nothing is created before it)."""
        from nbagent.notebook.magics.agent_stand_in import AgentSlot

        slot = AgentSlot()
        widgets.show(slot)

        def attach(agent: Any) -> None:
            self.session.on_open.remove(attach)
            self.session.on_agent_loop(lambda: slot.attach(agent))

        self.session.on_open.append(attach)
        print(
            f"no session in {self.session.shown_path} yet: these show it once %inject, %followup or %steer starts one"
        )

    def _agent_run(self, *, keep_inbox: bool) -> None:
        agent = self.session.ensure(create=False)
        if agent is None:
            print("no session open; nothing to run")
            return
        views = self._show_carried(agent)
        started = self.session.on_agent_loop(agent.wake)
        for view in views:
            view.refresh()
        if started:
            print(f"nbagent: started a turn for the pending messages ({agent.status})")
        elif agent.status == "running":
            print("nbagent: a turn is running; the pending followups run after it, in order")
        else:
            print("nbagent: nothing pending: no turn started")

    def _agent_cancel(self, *, keep_inbox: bool) -> None:
        agent = self.session.current()
        if agent is None:
            print("no session open; nothing to cancel")
            return
        running = agent.status == "running"
        # on the agent loop, so the inbox is cleared (and the turn told) when this cell returns
        self.session.on_agent_loop(lambda: agent.cancel(keep_inbox=keep_inbox))
        kept = "pending messages kept" if keep_inbox else "pending messages canceled"
        print(f"nbagent: {'cancelling the running turn' if running else 'no turn running'}; {kept}")

    def _agent_wait(self, *, keep_inbox: bool) -> None:
        agent = self.session.current()
        if agent is not None and agent.status == "running":
            _, interrupted = self.session.wait(
                lambda: self.session.agent_loop.submit(agent.when_idle()),
                on_interrupt=lambda: agent.cancel("interrupt"),
            )
            if interrupted:
                self._refresh_views()
                raise cancelled_by_interrupt("the running turn was cancelled") from None
        fork_commands.finish_replays(self.session)  # and what a replay not waited for left pending
        self._refresh_views()
        print(f"nbagent: {agent.status if agent is not None else 'no session open'}")

    def _refresh_views(self) -> None:
        for view in list(self.session.views):
            view.refresh()

    def _agent_transcript(self, *, keep_inbox: bool) -> None:
        from IPython.display import display

        from nbagent.notebook.magics.transcript import transcript_output

        agent = self.session.current()  # reading needs no session opened for writing (nor a lease)
        if agent is not None:
            events, session_id = agent.events, agent.session_id
        else:
            rows = self.session.rows() if self.session.knows_notebook() else []
            if not rows:
                print(f"no session in {self.session.shown_path} yet")
                return
            session_id = rows[0].id
            events = self.session.read_events(session_id)
        display(transcript_output(events, title=f"Session {session_id[:8]}"), raw=True)

    def _agent_context(self, *, keep_inbox: bool) -> None:
        meter_commands.context(self.session)

    def _agent_context_limit(self, value: str, *, keep_inbox: bool) -> None:
        meter_commands.context_limit(self.session, value)

    def _agent_approve(self, *value: str, keep_inbox: bool) -> None:
        tool_commands.decide(self.session, "allowed-once", list(value))

    def _agent_deny(self, *value: str, keep_inbox: bool) -> None:
        tool_commands.decide(self.session, "rejected", list(value))

    def _agent_tools(self, *value: str, keep_inbox: bool) -> None:
        tool_commands.tools(self.session, self.tools, list(value))

    def _agent_approvals(self, *value: str, keep_inbox: bool) -> None:
        tool_commands.approvals(self.session, list(value))

    def _agent_close(self, *, keep_inbox: bool) -> None:
        agent = self.session.current()
        if agent is None:
            print("no session open")
            return
        self.session.close()
        print(f"nbagent: closed session {agent.session_id[:8]}; the next magic resumes it")
