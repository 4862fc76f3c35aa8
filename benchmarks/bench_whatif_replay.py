"""A replay started from the "What if…" editor: from the click on Replay to its first streamed row
painted in the widget (issue 31: goal ≤ 300 ms), with the echo model, in JupyterLab in Chromium.

A real JupyterLab server (the browser tests' ``start_lab``) runs a notebook whose kernel opens an
echo-model session with two finished turns (context pending before each), shows the timeline
widget, and the benchmark opens the editor on the last turn and presses Replay ``--repeat`` times
(each press forks before the turn and replays it in the kernel). The time is the widget's own
``data-first-row-ms``: ``performance.now()`` at the click to the first row of the replayed turn in
the DOM (the kernel's fork, the replay's first commit, the coalesced patch, the paint).

Run: ``python benchmarks/bench_whatif_replay.py [--repeat 9]``; prints one table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from conftest import CHROMIUM, CHROMIUM_ARGS, start_lab  # noqa: E402
from notebook_page import open_notebook, run_cell  # noqa: E402

GOAL_MS = 300.0
SETUP = """\
import nbagent
from nbagent.widgets import show
agent = nbagent.open_session("bench.nbagent.sqlite", model="echo")
for turn in (1, 2):
    agent.inject(nbagent.UserMessage.text(f"context {turn}", {"kind": "note", "label": f"note {turn}"}))
    await agent.run(f"question {turn}")
inbox_widget, timeline_widget = show(agent)"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, start_lab(Path(tmp)) as lab:
        name = lab.write_notebook("bench-whatif", [SETUP])
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(120_000)
            open_notebook(page, lab.lab_url(name, "bench-whatif"))
            run_cell(page, 0)
            timeline = page.locator('.nba-timeline[data-nba-painted="true"]').first
            timeline.locator('.nba-turn[data-id="turn-2"] [data-action="whatif"]').click()
            editor = timeline.locator(".nba-whatif")
            for _ in range(args.repeat):
                editor.locator(".nba-whatif-go:not([disabled])").click()
                editor.locator(
                    '.nba-whatif-replay[data-first-row-ms] .nba-diff[data-nba-painted="true"]'
                ).wait_for()
                times.append(float(editor.locator(".nba-whatif-replay").get_attribute("data-first-row-ms")))
                page.wait_for_function("() => document.querySelector('.nba-whatif').dataset.state === 'done'")
            browser.close()
    median = statistics.median(times)
    rows = [
        ("replays", str(len(times)), "", ""),
        ("click → first streamed row, first replay (ms)", f"{times[0]:.0f}", "", ""),
        (
            "click → first streamed row, median (ms)",
            f"{median:.0f}",
            f"≤ {GOAL_MS:.0f}",
            "yes" if median <= GOAL_MS else "NO",
        ),
        ("click → first streamed row, max (ms)", f"{max(times):.0f}", "", ""),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'value':>8}  {'target':>7}  met?")
    for metric, value, target, met in rows:
        print(f"{metric:<{width}}  {value:>8}  {target:>7}  {met}")


if __name__ == "__main__":
    main()
