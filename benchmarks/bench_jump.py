"""Going to a turn of a very long session, as the lab server answers it: the window around turn 1,
around a middle turn, the page after it, and a search over every turn's title (one that matches
nothing, so it reads to the end or to its bound), in a 460,000-event session (27,059 turns).

Run: ``python benchmarks/bench_jump.py``. Each figure is the median of the server's own work
(:mod:`nbagent.labserver.jump`: store reads under the request's budget, the fold, the JSON),
without HTTP. Prints a table of medians against the budgets.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import write_history

from nbagent.labserver.jump import around, find_turns, later
from nbagent.store.budget import Budget

HUGE = 460_000
REPEATS = 7
PAGE = 20


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        result = fn()
        orjson.dumps(result)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), result


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "huge.nbagent.sqlite"
        t0 = time.perf_counter()
        sid, events = write_history(str(path), HUGE)
        print(f"setup: a {events}-event session in {time.perf_counter() - t0:.1f} s")

        def page() -> Budget:
            return Budget(page_events=20_000, page_bytes=32 << 20)

        def window(**kw: int) -> Callable[[], Any]:
            return lambda: (around if "turn" in kw else later)(
                path, sid, turns=PAGE, max_text=20_000, page=page(), **kw
            )

        first_ms, first = timed(window(turn=1))
        turns = first["summary"].split()[0]
        middle = int(turns.replace(",", "")) // 2
        middle_ms, _ = timed(window(turn=middle))
        after_ms, _ = timed(window(after=middle + PAGE))
        find_ms, found = timed(
            lambda: find_turns(path, sid, text="no such title", after=0, limit=20, budget=Budget())
        )
    reached = "the end" if found["next"] is None else f"turn {found['next']} (go on with after=)"
    rows = [
        (f"window around turn 1 of {turns} turns", first_ms, 100),
        (f"window around turn {middle}", middle_ms, 100),
        (f"page after turn {middle + PAGE}", after_ms, 100),
        (f"title search matching nothing (read to {reached})", find_ms, 2500),
    ]
    print("\n| measure | median ms | budget ms | |\n|---|---|---|---|")
    for name, median, budget in rows:
        print(f"| {name} | {median:.0f} | {budget} | {'met' if median <= budget else 'MISSED'} |")


if __name__ == "__main__":
    main()
