"""``%agent fork``, ``%agent replay``, ``%agent diff`` (SPEC §11.4) and ``%agent why`` (§11.5)."""

from __future__ import annotations

import argparse
import shlex
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from IPython.core.error import UsageError

from nbagent.errors import NbagentError

COMMANDS = ("fork", "replay", "diff", "why")
_UNSAID: weakref.WeakKeyDictionary[Any, list[tuple[Any, dict[str, str]]]] = weakref.WeakKeyDictionary()
"""Each kernel session's replays started without ``--wait`` that ``%agent wait`` still has to report."""
OWN_HELP = ("replay", "why")
"""The commands whose ``--help`` is their own (``REPLAY_HELP``, ``WHY_HELP``)."""

REPLAY_HELP = """\
%agent replay TURN [--drop ID ...] [--move ID=N ...] [--add N TEXT] [--wait]

Re-enact the parent's turn TURN in this fork (made with %agent fork --before-turn TURN), with its
arrivals edited, and show it live in this cell. Steps count as every view counts them:
"seen by step N" is the first step whose request holds the message.

  --drop ID ...     leave these arrivals out (also context that was pending before the turn)
  --move ID=N ...   deliver an arrival so that step N (1, 2, ...) is the first to see it
  --add N TEXT      deliver a new message (context) first seen by step N; repeatable
  --wait            block until the replayed turn ends, then say how it ended
  -h, --help        this help

IDs may be shortened to a unique prefix; agent.replay_plan(turn=TURN) lists the arrivals with their
labels and "seen by" steps. An arrival whose step the replayed turn never reaches is kept pending for
the next turn and named in one line (when the replay ends with --wait, else at %agent wait).
Compare with the parent: %agent diff TURN TURN."""

WHY_HELP = """\
%agent why TURN [--yes] [--max-runs N]

Which context mattered in turn TURN: replay the turn once per piece of context it claimed with that
piece left out, plus once with nothing left out (the control), each in a fork of its own, and rank
the pieces by how much the answer changed (1 - difflib similarity). Prints the plan first; a model
that is not offline asks before spending.

  --yes           run without asking
  --max-runs N    refuse a plan of more runs than N (default 32)
  -h, --help      this help"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the kernel's process
        raise UsageError(f"%agent {self.prog}: {message}")


def command(magics: Any, head: str, rest: str) -> None:
    """Run ``%agent fork|replay|diff REST`` for the kernel's ``AgentMagics``."""
    try:
        argv = shlex.split(rest)
    except ValueError as exc:
        raise UsageError(f"%agent {head}: {exc}") from None
    if head in ("replay", "why") and {"-h", "--help"} & set(argv):
        print(REPLAY_HELP if head == "replay" else WHY_HELP)
        return
    if head == "replay":
        _replay(magics, argv)
    elif head == "why":
        _why(magics.session, argv)
    else:
        {"fork": _fork, "diff": _diff}[head](magics.session, argv)


@contextmanager
def _usage_errors(head: str) -> Iterator[None]:
    """A plan or a run the agent refuses (no such turn, not a fork of it…) as ``%agent HEAD``'s usage error."""
    try:
        yield
    except (ValueError, NbagentError) as exc:
        raise UsageError(f"%agent {head}: {exc}") from None


def _current(session: Any) -> Any:
    agent = session.ensure(create=False)
    if agent is None:
        raise UsageError("no session open; start one with %followup or %agent resume ID")
    return agent


def _fork(session: Any, argv: list[str]) -> None:
    parser = _Parser(prog="fork", add_help=False)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--before-turn", type=int)
    where.add_argument("--at", type=int)
    args = parser.parse_args(argv)
    parent = _current(session)
    try:
        child = session.on_agent_loop(lambda: parent.fork(before_turn=args.before_turn, at=args.at))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    # The child has the forking agent's tools (SPEC §11.1) but not its MCP servers' tools: those call
    # the parent's connections, which stop with it; the equip gives the child servers of its own.
    session.on_agent_loop(lambda: _drop_tools(child, parent.mcp.offered()))
    point = f"before turn {args.before_turn}" if args.before_turn is not None else f"at seq {args.at}"
    said = (
        f"nbagent: forked session {parent.session_id[:8]} {point} into {child.session_id[:8]}, now the "
        f"current session (switch back: %agent resume {parent.session_id[:8]})"
    )
    # The parent closes first (as %agent resume closes it: a running turn ends aborted as "closed"),
    # then the child, opened once by the fork, is equipped and made current: no close and reopen.
    session.adopt(child, carried_from="from the session it was forked from", announce=lambda: said)


def _drop_tools(agent: Any, tools: dict[str, Any]) -> None:
    for name, tool in tools.items():
        if agent.tools.get(name) is tool:
            agent.remove_tool(name)


def _replay(magics: Any, argv: list[str]) -> None:
    session = magics.session
    parser = _Parser(prog="replay", add_help=False)
    parser.add_argument("turn", type=int)
    parser.add_argument("--drop", nargs="+", default=[])
    parser.add_argument("--move", nargs="+", default=[])
    parser.add_argument("--add", nargs=2, action="append", default=[], metavar=("N", "TEXT"))
    parser.add_argument("--wait", action="store_true")
    args = parser.parse_args(argv)
    agent = _current(session)
    with _usage_errors("replay"):
        plan = session.on_agent_loop(lambda: agent.replay_plan(turn=args.turn))
    ids = [a.message_id for a in plan]
    pending = [m.id for m in (*agent.inbox.next_turn, *agent.inbox.next_step)]
    drop = [_one_id([*ids, *pending], given) for given in args.drop]
    move = {_one_id(ids, given): _seen_by(item, given, sep, step) for item in args.move
            for given, sep, step in [item.partition("=")]}  # fmt: skip
    add = [(_added(text), _seen_by(f"{n} {text}", "", "=", n)) for n, text in args.add]
    view = _live_view(magics, agent, args.wait, set(drop))
    future = session.agent_loop.submit(agent.replay(turn=args.turn, drop=drop, move=move, add=add))
    if not args.wait:
        if view is None:
            print(f"nbagent: replaying turn {args.turn}; %agent wait blocks until it ends")
        _tell_when_done(session, future, _names(plan, move, add))
        return
    try:
        run, interrupted = session.wait(future, on_interrupt=lambda: agent.cancel("interrupt"))
    except ValueError as exc:
        raise UsageError(f"%agent replay: {exc}") from None
    if view is not None:
        view.refresh()
    if interrupted:
        raise UsageError("the replay was cancelled")
    for line in _late_lines(run, _names(plan, move, add)):
        print(line)
    print(f"nbagent: replayed turn {args.turn}: {run.outcome}; compare: %agent diff {args.turn} {args.turn}")


def _late_lines(run: Any, named: dict[str, str]) -> list[str]:
    """One line per arrival the replayed turn never reached (SPEC §11.2: never lost silently)."""
    return [
        f"nbagent: {named.get(late, late[:8])} came after the replayed turn's last step: it is pending "
        "for the next turn"
        for late in run.late
    ]


def _names(plan: Any, move: dict[str, int], add: list[tuple[Any, int]]) -> dict[str, str]:
    """Each arrival (and added message) as a late line names it: label, preview, its "seen by" step."""
    out = {
        a.message_id: f"{a.label} {a.preview!r} (seen by step {move.get(a.message_id, a.step) + 1})"
        for a in plan
    }
    for m, step in add:
        out[m.id] = f"added note {m.plain_text[:60]!r} (seen by step {step + 1})"
    return out


def _tell_when_done(session: Any, future: Any, named: dict[str, str]) -> None:
    """A replay not waited for: ``%agent wait`` waits for it too and names its late arrivals (or why
    it failed), so nothing it left pending goes unsaid."""
    _UNSAID.setdefault(session, []).append((future, named))


def finish_replays(session: Any) -> None:
    """``%agent wait``: wait for the replays started without ``--wait`` and print what each left."""
    for future, named in _UNSAID.pop(session, []):
        try:
            run, _ = session.wait(future)
        except Exception as exc:  # the replay ran on without a cell waiting: say why it failed
            print(f"nbagent: the replay failed: {exc}")
            continue
        for line in _late_lines(run, named):
            print(line)


def _seen_by(item: str, given: str, sep: str, step: str) -> int:
    """``--move ID=N`` / ``--add N``: N is "seen by step N" (1-based); the replay takes N - 1."""
    if not sep or not step.isdigit() or int(step) < 1:
        raise UsageError(
            f"%agent replay: {item!r} needs a step N >= 1 (the first step that sees it: --move ID=N, --add N TEXT)"
        )
    return int(step) - 1


def _added(text: str) -> Any:
    from nbagent.log.messages import NoteSource, UserMessage

    note: NoteSource = {"kind": "note"}
    return UserMessage.text(text, note)


def _live_view(magics: Any, agent: Any, waited: bool, dropped: set[str]) -> Any:
    """The replayed turn shown live in this cell, as ``%followup`` shows its turn: it follows the
    first message the turn will claim, never one the replay drops (``None`` when there is none)."""
    from nbagent.notebook.magics.live_turn import DisplaySurface, LiveTurn

    kept = [m for q in (agent.inbox.next_step, agent.inbox.next_turn[:1]) for m in q if m.id not in dropped]
    pending = kept[:1]
    if not pending:
        return None
    view = LiveTurn(
        agent,
        pending[0],
        "followup",
        DisplaySurface(),
        on_final=magics.forget_view,
        waited=waited,
        session=magics.session.session_ref(agent),
    )
    view.start()
    magics.tools.prompts.reserve(view)
    magics.session.views.append(view)
    return view


def _one_id(ids: list[str], given: str) -> str:
    found = [i for i in ids if i.startswith(given)]
    if len(found) != 1:
        what = "no arrival" if not found else f"{len(found)} arrivals"
        raise UsageError(f"{given!r} names {what} of this turn (see agent.replay_plan(turn=N))")
    return found[0]


def _diff(session: Any, argv: list[str]) -> None:
    from nbagent.views.diff import DIFF_MIME, diff_json, turn_diff
    from nbagent.views.diff_paint import diff_html, diff_markdown, diff_text

    if len(argv) != 2:
        raise UsageError("%agent diff takes two turns: [SESSION:]TURN [SESSION:]TURN")
    agent = _current(session)
    rows = session.rows()
    sides = []
    for spec in argv:
        sid, _, turn = spec.rpartition(":")
        if not turn.isdigit():
            raise UsageError(f"%agent diff: {spec!r} is not [SESSION:]TURN")
        if sid:
            found = [r.id for r in rows if r.id.startswith(sid)]
            if len(found) != 1:
                raise UsageError(f"%agent diff: {sid!r} matches {len(found)} sessions; see %agent sessions")
            sid = found[0]
        sides.append((sid or agent.session_id, int(turn)))
    (a, turn_a), (b, turn_b) = sides
    if a == b == agent.session_id:  # a fork's own turn beside its parent's is the usual question
        parent = next((r.parent for r in rows if r.id == agent.session_id), None)
        a = parent or a
    events = {sid: session.read_events(sid) for sid in {a, b}}
    try:
        diff = turn_diff(events[a], events[b], turn_a=turn_a, turn_b=turn_b, names=(a, b))
    except ValueError as exc:  # a turn a side does not have: the message names the turns it has
        print(f"nbagent: %agent diff: {exc}")
        return
    from IPython.display import display

    try:  # live, painted by the shared painter (labextension/src/widgets/painter.js)
        from nbagent.widgets.diff_widget import DiffWidget
    except ImportError:  # no anywidget: the same view model as Markdown
        display(
            {DIFF_MIME: diff_json(diff), "text/plain": diff_text(diff), "text/markdown": diff_markdown(diff),
             "text/html": diff_html(diff)},
            raw=True,
        )  # fmt: skip
        return
    display(DiffWidget(diff))


def _why(session: Any, argv: list[str]) -> None:
    from IPython.display import display

    from nbagent.views.attribution import attribution_html, attribution_text, plan_text

    parser = _Parser(prog="why", add_help=False)
    parser.add_argument("turn", type=int)
    parser.add_argument("--yes", action="store_true")
    parser.add_argument("--max-runs", type=int, default=32)
    args = parser.parse_args(argv)
    agent = _current(session)
    with _usage_errors("why"):
        plan = session.on_agent_loop(lambda: agent.attribution_plan(turn=args.turn))
    print(plan_text(plan))
    if not plan.items:
        print(f"nbagent: turn {args.turn} claimed no context besides its prompt: nothing to leave out")
        return
    if not plan.estimate.offline and not args.yes and not _agreed(plan):
        print("nbagent: not run (%agent why N --yes runs without asking)")
        return
    future = session.agent_loop.submit(agent.attribute(turn=args.turn, max_runs=args.max_runs))
    with _usage_errors("why"):
        result, interrupted = session.wait(future)
    if interrupted:
        raise UsageError("the attribution was cancelled")
    display({"text/plain": attribution_text(result), "text/html": attribution_html(result)}, raw=True)


def _agreed(plan: Any) -> bool:
    """Ask before spending on a model that is not offline (a front end without stdin: no)."""
    question = f"run {plan.runs} replays with {plan.model} (cost {plan.estimate.cost_text})? [y/N] "
    try:
        return input(question).strip().lower() in ("y", "yes")
    except Exception:  # StdinNotImplementedError: this front end cannot ask
        return False
