"""The JupyterLab extension's speed in a real browser: the Agent sessions panel listing 50 session
files, and the session tab's first paint of a 5,000-event session and of a 460,000-event one.

Run: ``python benchmarks/bench_lab.py`` (JupyterLab on 127.0.0.1, Debian's /usr/bin/chromium).
Each figure is the time from the command to the painted result (the REST call, the server's
read-only reads and fold, and the DOM), measured in the page with ``performance.now()`` up to the
next animation frame after the DOM is complete. Prints a table of medians against the budgets.
The 460k-event session (27,059 turns) is written straight into its file with the store's own
writer (``benchmarks/_util.py``); its tab paints the newest turns (a window the server folds from
a quiet point before them) and is timed until it has caught up with the whole log.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import write_history
from conftest import CHROMIUM, CHROMIUM_ARGS, start_lab
from lab_sessions import write_session
from playwright.sync_api import sync_playwright

import nbagent

FILES = 50
EVENTS = 5000
HUGE = 460_000
REPEATS = 7

LIST_JS = """async (folder) => {
  const app = window.jupyterapp;
  await app.commands.execute('filebrowser:go-to-path', {path: folder, dontShowBrowser: true});
  await app.commands.execute('nbagent:show-sessions');
  const t0 = performance.now();
  await app.commands.execute('nbagent:refresh-sessions');
  await new Promise(r => requestAnimationFrame(() => r()));
  const panel = document.getElementById('nbagent-sessions');
  return {ms: performance.now() - t0, rows: panel.querySelectorAll('.jp-nbagent-row').length};
}"""

OPEN_JS = """async ({file, id}) => {
  const app = window.jupyterapp;
  for (const w of Array.from(app.shell.widgets('main'))) { if (w.id.startsWith('nbagent-session-')) w.dispose(); }
  const t0 = performance.now();
  const tab = await app.commands.execute('nbagent:open-session', {file, id, label: 'bench'});
  await new Promise(resolve => {
    const node = tab.content.node;
    const done = () => node.dataset.seq !== undefined && node.dataset.seq === node.dataset.logSeq;
    if (done()) return resolve();
    new MutationObserver((_, obs) => { if (done()) { obs.disconnect(); resolve(); } })
      .observe(tab.content.node, {attributes: true});
  });
  await new Promise(r => requestAnimationFrame(() => r()));
  const ms = performance.now() - t0;
  return {ms, seq: Number(tab.content.node.dataset.seq), nodes: tab.content.node.querySelectorAll('.nba-turn').length};
}"""


def make_files(folder: Path) -> None:
    folder.mkdir()
    for i in range(FILES):
        write_session(
            folder / f"nb{i:02}.nbagent.sqlite",
            [f"Question {i} about the data", "And a follow-up"],
            context=f"notes {i}",
        )


async def _long(path: Path) -> str:
    from nbagent.context import cell_text
    from nbagent.models import Response, ScriptedModel

    model = ScriptedModel([])
    agent = nbagent.open_session(path, model=model)
    i = 0
    while len(agent.events) < EVENTS:
        agent.inject(cell_text(f"context {i}\n" + "row, " * 60, label=f"rows {i}"))
        model.add(Response("The answer streams in small pieces, " * 4, chunk_size=12))
        await agent.run(f"question {i}: what stands out?")
        i += 1
    await agent.close()
    return agent.session_id


def make_long(path: Path) -> tuple[str, int]:
    """A session of at least 5,000 events: turns of an injected context, a prompt, a streamed answer."""
    with ThreadPoolExecutor(1) as pool:
        sid = pool.submit(asyncio.run, _long(path)).result()
    return sid, len(nbagent.read_events(path, sid))


def main() -> None:
    os.environ.setdefault("NBAGENT_SYNCHRONOUS", "NORMAL")  # faster setup; reads are the same
    with tempfile.TemporaryDirectory() as tmp, start_lab(Path(tmp)) as lab, sync_playwright() as p:
        t0 = time.perf_counter()
        make_files(lab.root / "fifty")
        (lab.root / "long").mkdir()
        sid, events = make_long(lab.root / "long" / "long.nbagent.sqlite")
        huge_sid, huge_events = write_history(str(lab.root / "long" / "huge.nbagent.sqlite"), HUGE)
        print(
            f"setup: {FILES} files, a {events}-event session and a {huge_events}-event one in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(f"{lab.url}/lab/workspaces/bench?token={lab.token}")
        page.wait_for_function("() => window.jupyterapp?.commands.hasCommand('nbagent:refresh-sessions')")
        page.evaluate("() => window.jupyterapp.restored")

        listing = [page.evaluate(LIST_JS, "fifty") for _ in range(REPEATS)]
        assert all(r["rows"] == FILES for r in listing), listing
        opens = [
            page.evaluate(OPEN_JS, {"file": "long/long.nbagent.sqlite", "id": sid}) for _ in range(REPEATS)
        ]
        assert all(r["seq"] == events for r in opens), opens
        huge = [
            page.evaluate(OPEN_JS, {"file": "long/huge.nbagent.sqlite", "id": huge_sid})
            for _ in range(REPEATS)
        ]
        assert all(r["seq"] == huge_events for r in huge), huge
        browser.close()

    list_ms = [r["ms"] for r in listing]
    open_ms = [r["ms"] for r in opens]
    huge_ms = [r["ms"] for r in huge]
    rows = [
        ("panel lists 50 session files (refresh → painted)", statistics.median(list_ms), max(list_ms), 300),
        (f"tab first paint, {events} events, first open (cold fold)", open_ms[0], open_ms[0], 1000),
        (
            f"tab first paint, {events} events, reopened (median)",
            statistics.median(open_ms[1:]),
            max(open_ms[1:]),
            1000,
        ),
        (f"tab first paint, {huge_events} events, first open (cold window)", huge_ms[0], huge_ms[0], 1000),
        (
            f"tab first paint, {huge_events} events, reopened (median)",
            statistics.median(huge_ms[1:]),
            max(huge_ms[1:]),
            1000,
        ),
    ]
    print("\n| measure | median ms | max ms | budget ms | |\n|---|---|---|---|---|")
    for name, median, worst, budget in rows:
        verdict = "met" if median <= budget else "MISSED"
        print(f"| {name} | {median:.0f} | {worst:.0f} | {budget} | {verdict} |")


if __name__ == "__main__":
    main()
