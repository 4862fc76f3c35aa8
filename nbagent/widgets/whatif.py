"""The timeline widget's "What if…" editor, kernel side (SPEC §11.4).

The page asks for a finished turn's arrivals (``whatif-plan``), the person edits them, and
``whatif-replay`` runs here, in the notebook's kernel: a fork before the turn, the turn replayed
with the edits (the page speaks "seen by step N"; ``move={id: N - 1}`` in Python's terms), the
replayed turn streamed back into the widget as timeline patches while it runs, then the diff of the
two turns (``whatif-done``). Anything that goes wrong comes back as ``whatif-error`` with its words.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any

from nbagent.agent import Agent, LiveNotice
from nbagent.forks.editor_plan import editor_plan
from nbagent.log.events import Event
from nbagent.views import Coalescer, Timeline
from nbagent.views.attribution import Attribution, plan_text
from nbagent.views.diff import diff_json, turn_diff
from nbagent.views.markdown_tree import AnswerTrees
from nbagent.views.schema import TimelineSnapshot
from nbagent.views.text import clip

log = logging.getLogger("nbagent.widgets")
Send = Callable[[dict[str, Any]], None]


def plan_message(agent: Agent, turn: Any) -> dict[str, Any]:
    """The answer to ``whatif-plan``: the editor's view model, or why there is none."""
    if isinstance(turn, bool) or not isinstance(turn, int):
        return {"type": "whatif-error", "turn": turn, "message": f"not a turn number: {turn!r}"}
    try:
        return {"type": "whatif-plan", "turn": turn, "plan": editor_plan(agent.events, turn)}
    except ValueError as exc:
        return {"type": "whatif-error", "turn": turn, "message": str(exc)}


def _step(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what}: 'seen by step' is a number from 1, not {value!r}")
    return value


def edits(content: dict[str, Any]) -> tuple[list[str], dict[str, int], list[tuple[str, int]]]:
    """``drop``, ``move`` and ``add`` in Python's terms (delivered during step N - 1) from the page's
    message; bad input raises ``ValueError`` saying what was wrong."""
    drop = content.get("drop") or []
    move = content.get("move") or {}
    add = content.get("add") or []
    if not isinstance(drop, list) or not all(isinstance(i, str) for i in drop):
        raise ValueError("drop must be a list of message ids")
    if not isinstance(move, dict) or not isinstance(add, list):
        raise ValueError("move must map message ids to steps, add must be a list")
    moved = {str(i): _step(n, f"move {i}") - 1 for i, n in move.items()}
    added = []
    for a in add:
        text = a.get("text") if isinstance(a, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise ValueError("an added message needs its text")
        added.append((text, _step(a.get("seen_by"), "added message") - 1))
    return list(drop), moved, added


def _spawn(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]) -> Any:
    """Run ``coro`` on the agent's loop: a task when that loop is this thread's, else across."""
    try:
        here = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    if here is loop:
        return loop.create_task(coro)
    return asyncio.run_coroutine_threadsafe(coro, loop)


class ReplayFeed:
    """The fork's replayed turn as timeline patches, sent through the widget while it runs (the
    fork's copied history is skipped: the page shows the replayed turn only)."""

    def __init__(self, child: Agent, key: str, send: Send, delay: float) -> None:
        self.key, self._send, self._child = key, send, child
        self.timeline = Timeline()
        events = child.events
        self.timeline.seq = events[-1].seq + 1 if events else 0
        self.timeline.seed_pending(child.inbox.next_step, child.inbox.next_turn)
        self._trees = AnswerTrees()
        self._lock = threading.Lock()
        self._batch: Coalescer[Event] = Coalescer(self._flush, delay)
        self._off = child.on("event", self._on_event)

    def _on_event(self, notice: LiveNotice) -> None:
        if notice.event is not None:
            self._batch.push(notice.event)

    def _flush(self, events: list[Event]) -> None:
        with self._lock:
            start = self.timeline.seq
            ops = self._trees.patches(self.timeline.feed(events), self.timeline.nodes)
            end = self.timeline.seq
        if ops:
            msg = {"type": "whatif-patch", "key": self.key, "from": start, "to": end, "ops": ops}
            self._send({**msg, "time": events[-1].time})

    def snapshot(self) -> TimelineSnapshot:
        self._batch.flush_now()
        with self._lock:
            snap = self.timeline.snapshot()
            snap["nodes"] = [self._trees.node(n) for n in snap["nodes"]]
            return snap

    def close(self) -> None:
        """Send what is left and stop following the fork (twice is once)."""
        self._batch.flush_now()
        self._off()
        self._off = lambda: None
        self._batch.cancel()


class WhatIf:
    """One replay the editor asked for: fork before ``turn``, replay with the edits, diff."""

    def __init__(self, parent: Agent, turn: int, key: str, send: Send, delay: float) -> None:
        self.parent, self.turn, self.key, self._send, self._delay = parent, turn, key, send, delay
        self.feed: ReplayFeed | None = None
        self.done: Future[None] | asyncio.Task[None] | None = None

    def start(self, drop: list[str], move: dict[str, int], add: list[tuple[str, int]]) -> None:
        self.done = _spawn(self.parent.driver.loop, self._run(drop, move, add))

    def _error(self, message: str) -> None:
        self._send({"type": "whatif-error", "key": self.key, "turn": self.turn, "message": message})

    async def _run(self, drop: list[str], move: dict[str, int], add: list[tuple[str, int]]) -> None:
        child = None
        try:
            child = self.parent.fork(before_turn=self.turn)
            self.feed = ReplayFeed(child, self.key, self._send, self._delay)
            started = {"type": "whatif-started", "key": self.key, "turn": self.turn, "fork": child.session_id}
            self._send({**started, "snapshot": self.feed.snapshot()})
            run = await child.replay(self.turn, drop=drop, move=move, add=add)
            self.feed.close()  # every patch of the replayed turn before the diff
            d = turn_diff(self.parent.events, child.events, turn_a=self.turn, turn_b=self.turn,
                          names=(self.parent.session_id, child.session_id))  # fmt: skip
            late = [str(i) for i in getattr(run, "late", ())]
            self._send({"type": "whatif-done", "key": self.key, "turn": self.turn, "fork": child.session_id,
                        "outcome": run.outcome, "late": late, "diff": diff_json(d)})  # fmt: skip
        except Exception as exc:  # the page says what went wrong; nothing is lost (the parent is only read)
            log.warning("nbagent what-if replay failed: %s", exc)
            self._error(f"could not replay turn {self.turn}: {exc}")
        finally:
            if self.feed is not None:
                self.feed.close()
            if child is not None:
                await child.close()

    def resync(self) -> None:
        if self.feed is not None:
            self._send({"type": "whatif-reset", "key": self.key, "snapshot": self.feed.snapshot()})


def handle(
    widget_agent: Agent, runs: dict[str, WhatIf], content: dict[str, Any], send: Send, delay: float
) -> bool:
    """Answer one editor message from the page; ``False`` when it is not the editor's."""
    kind = content.get("type")
    if kind == "whatif-plan":
        send(plan_message(widget_agent, content.get("turn")))
        return True
    if kind == "whatif-resync":
        run = runs.get(str(content.get("key")))
        if run is not None:
            run.resync()
        return True
    if kind != "whatif-replay":
        return False
    turn, key = content.get("turn"), str(content.get("key") or "")
    try:
        if isinstance(turn, bool) or not isinstance(turn, int):
            raise ValueError(f"not a turn number: {turn!r}")
        drop, move, add = edits(content)
        plan = editor_plan(widget_agent.events, turn)  # a turn that is not finished is said here
        ids = {a["id"] for a in plan["arrivals"]}
        unknown = sorted((set(drop) | set(move)) - ids)
        if unknown:
            raise ValueError(f"not arrivals of turn {turn}: {', '.join(unknown)}")
    except ValueError as exc:
        send({"type": "whatif-error", "key": key, "turn": turn, "message": str(exc)})
        return True
    run = WhatIf(widget_agent, turn, key, send, delay)
    runs[key] = run
    run.start(drop, move, add)
    return True


# -- "Which context mattered?" (SPEC §11.5): the plan's estimate first, the runs on request ----------


def why_plan_message(agent: Agent, turn: int) -> dict[str, Any]:
    """The plan in words (``plan_text``: its items, the runs, what they would spend)."""
    plan = agent.attribution_plan(turn)
    return {"type": "why-plan", "turn": turn, "runs": plan.runs, "text": plan_text(plan)}


def bars_json(result: Attribution) -> dict[str, Any]:
    """The attribution as the page's bars: ranked items; those at or below the noise (the control
    run's score) are marked as saying nothing."""
    items = []
    for it in result.items:
        changed = "answer changed" if it.answer_changed else "same answer"
        items.append({
            "label": f"{it.label or it.source} {clip(it.preview, 40)!r}" if it.preview else it.label or it.source,
            "source": it.source,
            "badge": it.source,
            "score": it.score,
            "score_text": f"{it.score:.3f} · {changed} · fork {it.fork[:8]}",
            "meaningless": not result.meaningful(it),
            "fork": it.fork,
        })  # fmt: skip
    return {
        "turn": result.turn,
        "summary": f"Which context mattered in turn {result.turn}: how much the answer changed without "
        "each item (1 = all of it)",
        "noise_text": f"noise (the control run, nothing left out): {result.noise:.3f}; scores at or below it say "
        "nothing",
        "items": items,
    }


def handle_why(agent: Agent, content: dict[str, Any], send: Send) -> bool:
    """Answer ``why-plan`` / ``why-run``; ``False`` when the message is not about attribution."""
    kind, turn = content.get("type"), content.get("turn")
    if kind not in ("why-plan", "why-run"):
        return False
    if isinstance(turn, bool) or not isinstance(turn, int):
        send({"type": "why-error", "turn": turn, "message": f"not a turn number: {turn!r}"})
        return True
    if kind == "why-plan":
        try:
            send(why_plan_message(agent, turn))
        except Exception as exc:  # a turn it cannot plan: say why in the page
            send({"type": "why-error", "turn": turn, "message": str(exc)})
        return True

    async def run() -> None:
        try:
            result = await agent.attribute(turn)
            send({"type": "why-done", "turn": turn, "result": bars_json(result)})
        except Exception as exc:  # said in the page; the parent is never written
            log.warning("nbagent attribution failed: %s", exc)
            send({"type": "why-error", "turn": turn, "message": f"could not attribute turn {turn}: {exc}"})

    _spawn(agent.driver.loop, run())
    return True
