"""One view model, four paintings: the live cell, the widget, the saved HTML and the Markdown
transcript show the same labels, outcomes and failure reasons (in Debian's Chromium), with
readable contrast in both themes and badge colours that survive nbconvert."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import ARTIFACTS, Lab, shot
from notebook_page import open_notebook, run_cell, save, set_theme

from nbagent.views.escape import escape_markdown

pytestmark = pytest.mark.browser

SETUP = '''\
%load_ext nbagent
import json, pathlib
import pandas as pd
import nbagent
from nbagent.context import dataframe, error, cell_text
from nbagent.models import ScriptedModel, Response, ToolCall
from nbagent.views import timeline_json, transcript
from nbagent.widgets import show

@nbagent.tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 31.0 °C"

agent = get_ipython().magics_manager.registry["AgentMagics"].session.ensure()
agent.add_tool(lookup)
agent.set_model(ScriptedModel(RESPONSES))
inbox_widget, timeline_widget = show(agent)'''

PARITY_RESPONSES = (
    '[Response(tool_calls=[ToolCall("lookup", {"city": "Pune"})]), "Pune is warmest at 31.0 °C.", '
    'Response("Checking", failure="AUTH")]'
)
CONTRAST_RESPONSES = PARITY_RESPONSES.replace(
    'Response("Checking", failure="AUTH")',
    'Response("Slow", failure="RATE_LIMIT"), "ok", Response("x", failure="AUTH")',
)
INJECT = """\
df = pd.DataFrame({"city": ["Oslo", "Lima", "Pune"], "temp_c": [3.5, 18.2, 31.0]})
agent.inject(dataframe(df, name="df"))
agent.inject(error("KeyError", "'missing_0'", "Traceback (most recent call last):\\n  File \\"<cell>\\", line 1\\nKeyError: 'missing_0'"));"""
DUMP = """\
import asyncio
while agent.status != "idle": await asyncio.sleep(0.05)
pathlib.Path("transcript.md").write_text(transcript(agent.events))
pathlib.Path("bundle.json").write_text(json.dumps(timeline_json(agent.events)))"""

# What a painting shows of each turn: message badges and labels, tool outcomes, the turn's outcome
# and its reason in full. The same JS reads the widget, the live cells and the saved HTML.
READ_TURNS_JS = """(root) => [...root.querySelectorAll('.nba-turn')].map(t => ({
  turn: t.dataset.id,
  status: t.dataset.status,
  pill: t.querySelector(':scope > summary .nba-pill').textContent,
  outcome: t.querySelector(':scope > summary .nba-outcome')?.textContent ?? null,
  why: t.querySelector('.nba-why')?.textContent.replace(/^Why: /, '') ?? null,
  messages: [...t.querySelectorAll('.nba-msg')].map(m => [m.querySelector('.nba-badge').textContent,
    m.querySelector('.nba-label')?.textContent ?? '', m.querySelector('.nba-line').textContent]),
  tools: [...t.querySelectorAll('.nba-tool')].map(x => [x.querySelector('b').textContent, x.dataset.outcome]),
}))"""

CONTRAST_JS = """(selectors) => {
  // computed colours come as rgb()/rgba() (0-255) or, from color-mix(), as color(srgb r g b / a) (0-1)
  const rgba = (s) => {
    const v = s.replace(/^color\\(srgb/, '').match(/[\\d.e-]+/g).map(Number);
    const k = s.startsWith('color(') ? 255 : 1;
    return [v[0] * k, v[1] * k, v[2] * k, v.length > 3 ? v[3] : 1];
  };
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
  const background = (e) => {
    const layers = [];
    for (let n = e; n; n = n.parentElement) {
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let bg = [255, 255, 255, 1];
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  const out = [];
  for (const sel of selectors) for (const e of document.querySelectorAll(sel)) {
    if (!e.getClientRects().length || !e.textContent.trim()) continue;
    const bg = background(e);
    const fg = over(rgba(getComputedStyle(e).color), bg);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    out.push({ sel, text: e.textContent.slice(0, 30), ratio: (a + 0.05) / (b + 0.05) });
  }
  return out;
}"""
TEXT_SELECTORS = [
    ".nbagent .nba-badge", ".nbagent .nba-pill", ".nbagent .nba-muted", ".nbagent .nba-size",
    ".nbagent .nba-more", ".nbagent .nba-mark", ".nbagent .nba-outcome", ".nbagent .nba-line",
    ".nbagent .nba-label", ".nbagent .nba-step-head", ".nbagent .nba-queue-name", ".nbagent .nba-why",
    ".nbagent .nba-answer-text", ".nbagent .nba-remove",
]  # fmt: skip


def setup(responses: str) -> str:
    return SETUP.replace("RESPONSES", responses)


def output_html(page: Any, cell: int) -> list[str]:
    """The ``text/html`` of each output of ``cell`` as the notebook model holds it (what gets saved)."""
    return page.evaluate(
        """(i) => { const outs = window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs;
        const html = []; for (let k = 0; k < outs.length; k++) { const d = outs.get(k).data['text/html'];
        if (d) html.push(Array.isArray(d) ? d.join('') : d); } return html; }""",
        cell,
    )


def wait_saved(page: Any, cell: int, needle: str) -> None:
    """Wait until an output of ``cell`` holds ``needle`` in its saved HTML."""
    page.wait_for_function(
        """([i, needle]) => { const outs = window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs;
        for (let k = 0; k < outs.length; k++) { const d = outs.get(k).data['text/html'];
          if (d && (Array.isArray(d) ? d.join('') : d).includes(needle)) return true; }
        return false; }""",
        arg=[cell, needle],
    )


def saved_outputs(cell: dict[str, Any]) -> list[dict[str, Any]]:
    """The display outputs of a saved cell (streams left out)."""
    return [o["data"] for o in cell["outputs"] if "text/html" in o.get("data", {})]


def read_static(browser: Any, html: str, name: str) -> list[dict[str, Any]]:
    static = browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        static.set_content(f"<html><body>{html}</body></html>")
        turns = static.evaluate(READ_TURNS_JS, static.locator("body").element_handle())
        shot(static, name, static.locator(".nbagent").first)
        return turns
    finally:
        static.close()


def test_one_session_reads_the_same_in_the_live_cell_the_widget_the_saved_html_and_the_transcript(
    lab: Lab, page: Any, browser: Any
) -> None:
    name = lab.write_notebook(
        "parity",
        [
            setup(PARITY_RESPONSES),
            INJECT,
            "%followup Which city is warmest?",
            "%followup And the coldest?",
            DUMP,
        ],
    )
    open_notebook(page, lab.lab_url(name, "parity"))
    run_cell(page, 0)
    page.locator(".nba-inbox").first.wait_for()
    run_cell(page, 1)
    # The saved view is current on every change, not only when the agent goes idle.
    wait_saved(page, 0, 'data-pending="2"')
    run_cell(page, 2)
    page.locator('.nba-timeline .nba-turn[data-id="turn-1"][data-status="completed"]').wait_for()
    run_cell(page, 3)
    page.locator('.nba-timeline .nba-turn[data-id="turn-2"][data-status="error"]').wait_for()
    run_cell(page, 4)
    page.locator('.nba-live .nba-turn[data-id="turn-2"][data-status="error"]').wait_for()
    timeline = page.locator(".nba-timeline")
    timeline.locator('.nba-turn[data-id="turn-2"] .nba-why').wait_for()

    widget = page.evaluate(READ_TURNS_JS, timeline.element_handle())
    shot(page, "10-parity-widget-and-live-cells")

    assert [t["turn"] for t in widget] == ["turn-1", "turn-2"]
    one, two = widget
    assert one["messages"] == [
        ["dataframe", "df · 3×2 · pandas", "3 rows × 2 columns: city, temp_c"],
        ["error", "KeyError: 'missing_0'", ""],
        ["followup", "", "Which city is warmest?"],
    ]
    assert one["tools"] == [["lookup", "done"]] and (one["pill"], one["outcome"], one["why"]) == (
        "completed",
        None,
        None,
    )
    assert two["messages"] == [["followup", "", "And the coldest?"]]
    assert (two["status"], two["pill"]) == ("error", "failed")
    assert two["outcome"] == "failed: AUTH: scripted AUTH failure"
    assert two["why"] == "AUTH: scripted AUTH failure"

    live_cells = [
        page.evaluate(READ_TURNS_JS, page.locator(".nba-live").nth(i).element_handle()) for i in range(2)
    ]
    assert [turn for cell in live_cells for turn in cell] == widget  # each live view in its own cell

    wait_saved(page, 0, 'data-id="turn-2" data-status="error"')  # re-published within half a second
    save(page)
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    saved = json.loads((lab.root / name).read_text())
    timeline_data = saved_outputs(saved["cells"][0])[1]
    timeline_html = "".join(timeline_data["text/html"])
    assert read_static(browser, timeline_html, "11-parity-saved-html") == widget
    bundle = timeline_data["application/vnd.nbagent.timeline+json"]
    assert bundle["version"] == 1 and [n["id"] for n in bundle["nodes"] if n["type"] == "turn"] == [
        "turn-1",
        "turn-2",
    ]

    markdown = (lab.root / "transcript.md").read_text()
    md = escape_markdown  # the transcript shows the same words, escaped as Markdown text
    for turn in widget:
        for badge, label, line in turn["messages"]:
            assert (
                f"**{md(badge)}** {md(label)}" if label else f"**You** · {md(badge)}\n\n> {md(line)}"
            ) in markdown
        if turn["outcome"]:
            assert f"*Turn {turn['turn'][5:]}: {md(turn['outcome'])}*" in markdown
    assert "*Turn 1: completed*" in markdown

    # nbconvert's CSS for `code` and `pre` must not grey the badges out: colours survive export.
    # (With saved widget state nbconvert embeds the widgets themselves; the live cells are HTML.)
    light_colours = dict(
        page.evaluate(
            "() => [...document.querySelectorAll('.nba-timeline .nba-msg .nba-badge')].map(b => [b.textContent, getComputedStyle(b).color])"
        )
    )
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(lab.root / name)],
        check=True,
        capture_output=True,
        cwd=lab.root,
    )
    exported = (lab.root / name).with_suffix(".html")
    converted = browser.new_page(viewport={"width": 1100, "height": 900})
    try:
        converted.goto(exported.as_uri())
        badges = converted.locator(".nba-live .nba-msg .nba-badge")
        badges.first.wait_for()
        colours = dict(badges.evaluate_all("els => els.map(b => [b.textContent, getComputedStyle(b).color])"))
        backgrounds = set(badges.evaluate_all("els => els.map(b => getComputedStyle(b).backgroundColor)"))
        shot(converted, "12-nbconvert-html", converted.locator(".nba-live").first)
    finally:
        converted.close()
    assert colours == light_colours
    assert len(set(colours.values())) == 3 and len(backgrounds) == 3  # followup, dataframe, error


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_text_and_badges_reach_wcag_aa_contrast(lab: Lab, page: Any, theme: str) -> None:
    slug = "light" if "Light" in theme else "dark"
    name = lab.write_notebook(
        f"contrast-{slug}",
        [
            setup(CONTRAST_RESPONSES),
            INJECT + '\nagent.inject(cell_text("note a\\nnote b", label="units"));',
            "%followup Which city is warmest?",
            "%followup And now?",
            "%followup Fail, please",
            'agent.inbox.append("next-turn", nbagent.UserMessage.text("queued followup"))\n'
            'agent.inject(nbagent.UserMessage.text("steer me"));',
        ],
    )
    open_notebook(page, lab.lab_url(name, f"contrast-{slug}"))
    try:
        set_theme(page, theme)
        for i in range(3):
            run_cell(page, i)
        page.locator('.nba-timeline .nba-turn[data-id="turn-1"][data-status="completed"]').wait_for()
        run_cell(page, 3)
        page.locator('.nba-timeline .nba-turn[data-id="turn-2"][data-status="completed"]').wait_for()
        run_cell(page, 4)
        page.locator('.nba-timeline .nba-turn[data-id="turn-3"][data-status="error"]').wait_for()
        run_cell(page, 5)
        page.locator('.nba-inbox[data-pending="2"]').wait_for()
        page.locator(".nba-timeline .nba-msg summary").first.click()
        ratios = page.evaluate(CONTRAST_JS, TEXT_SELECTORS)
        shot(page, f"13-contrast-{slug}")
    finally:
        set_theme(page, "JupyterLab Light")
    low = [r for r in ratios if r["ratio"] < 4.5]
    measured = {r["sel"] for r in ratios}
    (ARTIFACTS / f"contrast-{slug}.json").write_text(json.dumps(ratios, indent=1, ensure_ascii=False))
    assert {
        ".nbagent .nba-badge",
        ".nbagent .nba-pill",
        ".nbagent .nba-muted",
        ".nbagent .nba-size",
    } <= measured
    assert not low, f"below WCAG AA 4.5:1 in {theme}: {low}"


def test_a_long_timeline_opens_at_recent_turns_and_inbox_items_open_to_a_preview(lab: Lab, page: Any) -> None:
    long_answer = "The figures 1234567.89 and 7654321.01 reconcile with the ledger totals " * 8
    name = lab.write_notebook(
        "long",
        [
            setup(f"[{long_answer!r}] * 30"),
            "for i in range(30):\n    agent.followup(f'question {i}')\n    await agent.when_idle()\n"
            "agent.inject(cell_text('first line\\nsecond line\\nthird line', label='notes'));",
            "show(agent);",
        ],
    )
    page.set_viewport_size({"width": 700, "height": 1000})
    open_notebook(page, lab.lab_url(name, "long"))
    run_cell(page, 0)
    run_cell(page, 1)
    page.locator('.nba-timeline .nba-turn[data-id="turn-30"][data-status="completed"]').wait_for()
    page.locator('.nba-inbox[data-pending="1"]').wait_for()
    run_cell(page, 2)  # show again: a fresh view of a long session
    scroll = page.locator(".nba-timeline .nba-scroll").last
    # Opened at the recent turns: the last turn's head is in sight, the first turns are scrolled away.
    page.wait_for_function(
        """() => { const all = document.querySelectorAll('.nba-timeline .nba-scroll');
        const e = all[all.length - 1]; const t = e && e.querySelector('[data-id="turn-30"]');
        if (!t || e.scrollTop <= 0) return false;
        const r = t.getBoundingClientRect(), v = e.getBoundingClientRect();
        return r.top >= v.top - 1 && r.top < v.bottom; }"""
    )
    assert scroll.locator(".nba-turn[open]").count() == 3

    inbox = page.locator(".nba-inbox").last
    assert inbox.locator(".nba-pill").inner_text() == "agent idle"
    assert page.locator(".nba-timeline .nba-head .nba-pill").last.inner_text() == "idle"
    empty = inbox.locator('.nba-queue[data-queue="next-turn"]')
    assert "nba-queue-empty" in (empty.get_attribute("class") or "")
    assert empty.bounding_box()["height"] < 40  # an empty queue is one compact line
    item = inbox.locator(".nba-inbox-item").first
    assert item.locator(".nba-more").inner_text() == "+2 lines"
    item.locator("summary").click()
    assert item.locator(".nba-detail pre").inner_text() == "first line\nsecond line\nthird line"

    answer = scroll.locator('.nba-turn[data-id="turn-30"] .nba-answer').first
    answer.click()
    text = answer.inner_text()
    assert text.count("reconcile with the ledger") == 8  # shown once, not repeated when clicked
    style_js = "e => [getComputedStyle(e).overflowWrap, getComputedStyle(e).wordBreak, getComputedStyle(e).whiteSpace]"
    # The answer is rendered as Markdown (whitespace collapses, as Markdown has it); lines break
    # between words and numbers, never inside a number.
    assert answer.locator(".nba-answer-text").evaluate(style_js) == ["break-word", "normal", "normal"]
    answer.locator(".nba-raw-toggle").click()  # its raw text, one click away, keeps its lines
    assert answer.get_attribute("data-show") == "raw"
    raw = answer.locator(".nba-answer-raw")
    assert raw.inner_text().count("reconcile with the ledger") == 8
    assert raw.evaluate(style_js)[1:] == ["normal", "pre-wrap"]
    shot(page, "14-long-timeline-700px")
