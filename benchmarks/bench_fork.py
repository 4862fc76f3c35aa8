"""Forks, replay plans and turn diffs (issue #23): ``python benchmarks/bench_fork.py [--tiny]``.

Prints one table:

- **fork of a 100k-event session** (SQLite): ``nbagent.fork_session(path, id, at=last)`` — the
  store-side copy and opening the child — against a bare ``BEGIN IMMEDIATE; INSERT sessions; INSERT
  … SELECT; COMMIT`` of the same rows from a second ``sqlite3`` connection, alternating; goal ≤ 1.5×.
- **replay plan of a 1,000-event turn**: ``child.replay_plan(turn=1)`` in a fork made before it
  (reading the parent's turn from the file and folding it); goal ≤ 50 ms.
- **diff of two 50-step turns**: ``turn_diff`` and its Markdown painting (Python side only; the
  browser painting is not built yet).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _util
from _util import Row, median

import nbagent
from nbagent import _json
from nbagent.log.events import Event
from nbagent.store.sqlite.store import SessionFile
from nbagent.views.diff import turn_diff
from nbagent.views.diff_paint import diff_markdown

perf = time.perf_counter


def _message(text: str, kind: str = "user") -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "user", "content": [{"type": "text", "text": text}],
            "source": {"kind": kind}}  # fmt: skip


def long_turn(steps: int) -> list[tuple[str, dict[str, Any], int | None]]:
    """Turn 1 with ``steps`` steps; during each but the last a note arrives in the tool batch."""
    prompt = _message("go")
    out: list[tuple[str, dict[str, Any], int | None]] = [
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [prompt]}, 1),
        ("turn/start", {"turn": 1}, None),
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removed_count": 1, "inserted": []}, 0),
    ]
    claimed = [prompt]
    for step in range(1, steps + 1):
        at = {"turn": 1, "step": step}
        out.append(("step/start", at, None))
        out += [("user/message", m, None) for m in claimed]
        if step == steps:
            answer = {"id": uuid.uuid4().hex, "role": "assistant", "content": [{"type": "text", "text": "done"}],
                      "source": {"kind": "model", "provider": "scripted", "model": "scripted"}}  # fmt: skip
            out += [("assistant/message", {**at, "message": answer}, None), ("step/end", at, None)]
            break
        call = {"type": "tool-call", "id": f"c{step}", "name": "lookup", "arguments": "{}"}
        answer = {"id": uuid.uuid4().hex, "role": "assistant", "content": [call],
                  "source": {"kind": "model", "provider": "scripted", "model": "scripted"}}  # fmt: skip
        note = _message(f"note {step}", "note")
        result = {"id": uuid.uuid4().hex, "role": "user",
                  "content": [{"type": "tool-result", "tool_call_id": f"c{step}", "content": [{"type": "text", "text": "v"}]}],
                  "source": {"kind": "tool", "tool": "lookup", "call_id": f"c{step}"}}  # fmt: skip
        out += [
            ("assistant/message", {**at, "message": answer}, None),
            ("tool/call", {**at, "call_id": f"c{step}", "name": "lookup", "arguments": "{}"}, None),
            ("agent/inbox/spliced", {"target": "next-step", "start": 0, "inserted": [note]}, 1),
            ("tool/result", {**at, "message": result}, None),
            ("step/end", at, None),
            (
                "agent/inbox/spliced",
                {"target": "next-step", "start": 0, "removed_count": 1, "inserted": []},
                0,
            ),
        ]
        claimed = [note]
    out.append(("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, None))
    return out


def write_session(
    path: Path, events: list[tuple[str, dict[str, Any], int | None]]
) -> tuple[str, list[Event]]:
    sid = uuid.uuid4().hex
    now = int(time.time() * 1000)
    rows = [(sid, seq, now + seq, t, _json.dumps(d), p) for seq, (t, d, p) in enumerate(events)]
    file = SessionFile(path)
    try:
        file.write(rows, session=(sid, now, "bench", None, None, "echo", "{}"))
    finally:
        file.close()
    return sid, [Event(seq, now + seq, t, d) for seq, (t, d, _) in enumerate(events)]


def bare_copy(path: Path, parent: str, stop: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        child = uuid.uuid4().hex
        t0 = perf()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO sessions VALUES (?, ?, 'bare', ?, NULL, 'echo', '{}')", (child, 0, parent))
        conn.execute(
            "INSERT INTO events SELECT ?, seq, time, type, data, inbox_pending FROM events "
            "WHERE session_id = ? AND seq <= ? ORDER BY seq",
            (child, parent, stop),
        )
        conn.execute("COMMIT")
        return perf() - t0
    finally:
        conn.close()


async def bench_fork(folder: Path, size: int, reps: int) -> Row:
    path = folder / "fork.nbagent.sqlite"
    sid, count = _util.write_history(str(path), size)
    ours, bare = [], []
    for rep in range(reps):
        if rep % 2:  # alternate which goes first: each leaves the write-ahead log in another state
            bare.append(bare_copy(path, sid, count - 1))
        t0 = perf()
        child = nbagent.fork_session(path, sid, at=count - 1)
        ours.append(perf() - t0)
        await child.close()
        if not rep % 2:
            bare.append(bare_copy(path, sid, count - 1))
    value, base = median(ours), median(bare)
    return Row(f"fork of a {count:,}-event session", value, "s", base, "≤ 1.5x bare", value <= 1.5 * base)


async def bench_plan(folder: Path, steps: int, reps: int) -> Row:
    path = folder / "plan.nbagent.sqlite"
    events = long_turn(steps)
    sid, _ = write_session(path, events)
    child = nbagent.fork_session(path, sid, before_turn=1)
    try:
        samples = []
        for _ in range(reps):
            t0 = perf()
            plan = child.replay_plan(turn=1)
            samples.append(perf() - t0)
        assert len(plan) == steps - 1
    finally:
        await child.close()
    value = median(samples)
    return Row(f"replay plan of a {len(events):,}-event turn", value, "s", target="≤ 50 ms", ok=value <= 0.05)


def bench_diff(steps: int, reps: int) -> Row:
    a = [Event(i, i, t, d) for i, (t, d, _) in enumerate(long_turn(steps))]
    b = [Event(i, i, t, d) for i, (t, d, _) in enumerate(long_turn(steps))]
    samples = []
    for _ in range(reps):
        t0 = perf()
        diff_markdown(turn_diff(a, b, turn_a=1, turn_b=1, names=("a", "b")))
        samples.append(perf() - t0)
    return Row(
        f"diff of two {steps}-step turns (model + Markdown)",
        median(samples),
        "s",
        target="(browser: not built)",
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--dir", help="where the session files go (default: a temporary directory)")
    args = parser.parse_args()
    size, steps, reps = (2_000, 20, 2) if args.tiny else (100_000, 125, 6)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        rows = [await bench_fork(folder, size, reps), await bench_plan(folder, steps, reps * 4),
                bench_diff(50 if not args.tiny else 5, reps * 4)]  # fmt: skip
    print(_util.table(rows))


if __name__ == "__main__":
    asyncio.run(main())
