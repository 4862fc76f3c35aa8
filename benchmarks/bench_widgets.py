"""Widget speed in a real browser: first render of a 6,600-event session, update latency, expand;
and in Python, the per-event cost of parsing typed events and of the view-model fold.

Run: ``python benchmarks/bench_widgets.py`` (JupyterLab on 127.0.0.1, Debian's /usr/bin/chromium).
Prints a table of medians (and p95 where it matters) against the budgets of issue #4.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))

from conftest import CHROMIUM, CHROMIUM_ARGS, start_lab
from notebook_page import open_notebook, output_text, run_cell, setup_cell
from playwright.sync_api import sync_playwright

TURNS = 100
REPEATS = 5
BUILD = f"""\
long = "The answer streams in small pieces, " * 6
model.add(*[Response(long, chunk_size=4) for _ in range({TURNS})])
for i in range({TURNS}):
    agent.inject(UserMessage.text(f"context {{i}}\\n" + "row, " * 40, source={{"kind": "dataframe", "name": "df"}}))
    agent.followup(f"question {{i}}")
    await agent.when_idle()
print(len(agent.events))"""
SHOW = "from nbagent.widgets import TimelineWidget\nTimelineWidget(agent)"
STREAM = """\
model.add(Response("streamed text " * 120, chunk_size=3, chunk_delay=0.002))
agent.followup("stream now")
await agent.when_idle()"""


WATCH_PAINTS = """() => {
  window.benchPaints = [];
  const seen = new WeakMap();
  new MutationObserver((records) => {
    for (const r of records) {
      const e = r.target;
      const painted = Number(e.dataset.paintedAt), time = Number(e.dataset.eventTime);
      if (!painted || !time || seen.get(e) === painted) continue;
      seen.set(e, painted);
      window.benchPaints.push({ painted, time });
    }
  }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["data-painted-at"] });
}"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fold_cost(turns: int) -> tuple[float, float]:
    """Per-event cost of the one adapter (``parse_event``) and of the whole fold, on a session of
    the same shape as the browser's, read in memory (medians of 5)."""
    import asyncio

    import nbagent
    from nbagent import UserMessage
    from nbagent.log.events import parse_event
    from nbagent.models import Response, ScriptedModel
    from nbagent.views import project

    async def build() -> tuple:
        long = "The answer streams in small pieces, " * 6
        agent = nbagent.open_session(None, model=ScriptedModel([Response(long, chunk_size=4)] * turns))
        for i in range(turns):
            agent.inject(
                UserMessage.text(f"context {i}\n" + "row, " * 40, source={"kind": "dataframe", "name": "df"})
            )
            agent.followup(f"question {i}")
            await agent.when_idle()
        events = agent.events
        await agent.close()
        return events

    events = asyncio.run(build())
    parse, fold = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        for e in events:
            parse_event(e)
        parse.append((time.perf_counter() - t0) / len(events) * 1e6)
        t0 = time.perf_counter()
        project(events)
        fold.append((time.perf_counter() - t0) / len(events) * 1e6)
    return statistics.median(fold), statistics.median(parse)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, start_lab(Path(tmp)) as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(120_000)
        name = lab.write_notebook("bench", [setup_cell("bench", "[]"), BUILD, SHOW, STREAM])
        open_notebook(page, lab.lab_url(name, "bench"))
        run_cell(page, 0)
        run_cell(page, 1)
        events = int(output_text(page, 1).strip())

        render_js, end_to_end = [], []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            run_cell(page, 2)
            page.locator(f'.nba-timeline .nba-turn[data-id="turn-{TURNS}"]').last.wait_for()
            end_to_end.append((time.perf_counter() - t0) * 1000)
            render_js.append(
                float(page.locator(".nba-timeline").last.get_attribute("data-render-ms") or "nan")
            )

        expand = []
        heads = page.locator(".nba-timeline").last.locator(".nba-turn-head")
        for i in range(5):
            expand.append(
                heads.nth(10 + i).evaluate(
                    "h => { const t = performance.now(); h.click(); h.parentElement.offsetHeight;"
                    " return performance.now() - t; }"
                )
            )

        # Each view stamps data-event-time (the commit time of the last event it painted) and
        # data-painted-at on its root; the benchmark watches those attributes, production code keeps
        # no hook for it.
        page.evaluate(WATCH_PAINTS)
        run_cell(page, 3)
        page.locator(
            f'.nba-timeline .nba-turn[data-id="turn-{TURNS + 1}"][data-status="completed"]'
        ).last.wait_for()
        stats = page.evaluate("() => window.benchPaints")
        latency = [s["painted"] - s["time"] for s in stats]
        streamed_events = int(page.locator(".nba-timeline").last.get_attribute("data-seq") or 0) - events
        views = page.locator(".nba-timeline").count()
        browser.close()

    rows = [
        ("first render, JS build (ms)", statistics.median(render_js), max(render_js), 1000.0),
        ("first render, run cell → visible (ms)", statistics.median(end_to_end), max(end_to_end), 1000.0),
        ("expand an old turn (ms)", statistics.median(expand), max(expand), 100.0),
        ("update latency, commit → DOM (ms)", statistics.median(latency), pct(latency, 0.95), 250.0),
    ]
    fold_us, parse_us = fold_cost(TURNS)
    rows.append(("parse one event, typed record (µs)", parse_us, parse_us, 20.0))
    rows.append(("fold one event into the view model (µs)", fold_us, fold_us, 100.0))
    print(
        f"\nsession: {events} events in {TURNS} turns; streaming turn: {streamed_events} events "
        f"in {len(stats) / views:.0f} front-end messages per view ({views} views)"
    )
    print(f"{'measure':40} {'median':>9} {'max/p95':>9} {'budget':>8} {'median/budget':>14}")
    for label, median, worst, budget in rows:
        print(f"{label:40} {median:9.1f} {worst:9.1f} {budget:8.0f} {median / budget:14.2f}")


if __name__ == "__main__":
    main()
