"""``%agent fork``, ``%agent replay`` and ``%agent diff`` (SPEC §11.4)."""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
from typing import Any

from IPython.core.error import UsageError

COMMANDS = ("fork", "replay", "diff")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the kernel's process
        raise UsageError(f"%agent {self.prog}: {message}")


def command(session: Any, head: str, rest: str) -> None:
    """Run ``%agent fork|replay|diff REST`` against the kernel's session holder."""
    try:
        argv = shlex.split(rest)
    except ValueError as exc:
        raise UsageError(f"%agent {head}: {exc}") from None
    {"fork": _fork, "replay": _replay, "diff": _diff}[head](session, argv)


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
    session.run(child.close())
    with contextlib.redirect_stdout(io.StringIO()):  # one line of our own below
        session.resume(child.session_id)
    point = f"before turn {args.before_turn}" if args.before_turn is not None else f"at seq {args.at}"
    print(
        f"nbagent: forked session {parent.session_id[:8]} {point} into {child.session_id[:8]}, now the "
        f"current session (switch back: %agent resume {parent.session_id[:8]})"
    )


def _replay(session: Any, argv: list[str]) -> None:
    parser = _Parser(prog="replay", add_help=False)
    parser.add_argument("turn", type=int)
    parser.add_argument("--drop", nargs="+", default=[])
    parser.add_argument("--move", nargs="+", default=[])
    parser.add_argument("--wait", action="store_true")
    args = parser.parse_args(argv)
    agent = _current(session)
    try:
        plan = session.on_agent_loop(lambda: agent.replay_plan(turn=args.turn))
    except (ValueError, Exception) as exc:
        raise UsageError(f"%agent replay: {exc}") from None
    ids = [a.message_id for a in plan]
    drop = [_one_id(ids, given) for given in args.drop]
    move = {}
    for item in args.move:
        given, sep, step = item.partition("=")
        if not sep or not step.isdigit():
            raise UsageError(f"%agent replay --move takes ID=STEP, not {item!r}")
        move[_one_id(ids, given)] = int(step)
    future = session.agent_loop.submit(agent.replay(turn=args.turn, drop=drop, move=move))
    if not args.wait:
        print(
            f"nbagent: replaying turn {args.turn} with {len(plan) - len(drop)} arrival(s); %agent wait "
            f"blocks until it ends, then %agent diff {args.turn} {args.turn} compares it"
        )
        return
    run, interrupted = session.wait(future, on_interrupt=lambda: agent.cancel("interrupt"))
    if interrupted:
        raise UsageError("the replay was cancelled")
    print(f"nbagent: replayed turn {args.turn}: {run.outcome}" + (f" — {run.text}" if run.text else ""))


def _one_id(ids: list[str], given: str) -> str:
    found = [i for i in ids if i.startswith(given)]
    if len(found) != 1:
        what = "no arrival" if not found else f"{len(found)} arrivals"
        raise UsageError(f"{given!r} names {what} of this turn (see agent.replay_plan(turn=N))")
    return found[0]


def _diff(session: Any, argv: list[str]) -> None:
    from nbagent.views.diff import diff_text, turn_diff

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
    print(diff_text(turn_diff(events[a], events[b], turn_a=turn_a, turn_b=turn_b, names=(a, b))))
