"""The per-step context bar (SPEC §12; issue 24) in the timeline widget, light and dark: a stacked
bar by source kind in the badges' colours, each part's numbers in its tooltip, the total in words
readable at WCAG AA; the same bar in the lab extension's painting of the saved output."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import open_notebook, run_cell, set_theme, setup_cell
from page_errors import PageErrors
from test_lab_a11y import AA, CONTRAST_JS

pytestmark = pytest.mark.browser

DATAFRAME_CELL = """\
df = pd.DataFrame({"city": ["Oslo", "Lima", "Pune"], "temp_c": [3.5, 18.2, 31.0]})
agent.inject(dataframe(df, name="df"))
agent.inject(cell_text("prices are in EUR", label="note"));"""
READ_BAR_JS = """meter => ({
  title: meter.title,
  total: meter.querySelector('.nba-muted').textContent,
  parts: [...meter.querySelectorAll('[data-part]')].map(p => ({
    kind: p.dataset.part, title: p.title, width: p.getBoundingClientRect().width,
    colour: getComputedStyle(p).backgroundColor })),
})"""
BADGE_COLOURS_JS = """root => Object.fromEntries([...root.querySelectorAll('.nba-msg .nba-badge')]
  .map(b => [b.dataset.kind, getComputedStyle(b).color]))"""


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_each_steps_bar_shows_sources_in_badge_colours_with_numbers_and_readable_totals(
    lab: Lab, page: Any, theme: str
) -> None:
    slug = theme.split()[-1].lower()
    cells = [
        setup_cell(f"bar-{slug}", '["Pune is warmest."]'),
        DATAFRAME_CELL,
        'agent.followup("Which city is warmest?");',
    ]
    errors = PageErrors().watch(page)
    try:
        open_notebook(page, lab.lab_url(lab.write_notebook(f"bar-{slug}", cells), f"bar-{slug}"))
        set_theme(page, theme)
        for i in range(3):
            run_cell(page, i)
        timeline = page.locator('.jp-nbagent-output[data-view="live"] .nba-timeline')
        timeline.locator('.nba-turn[data-id="turn-1"][data-status="completed"]').wait_for()
        meter = timeline.locator(".nba-step .nba-step-head .nba-meter").first
        meter.wait_for()
        bar = meter.evaluate(READ_BAR_JS)
        shot(page, f"context-bar-{slug}", timeline)

        kinds = [p["kind"] for p in bar["parts"]]
        assert {"dataframe", "cell", "user"} <= set(kinds), kinds
        # Numbers on hover: every part's tooltip names its kind and its tokens; the bar's, all of them.
        for part in bar["parts"]:
            assert re.fullmatch(rf"{re.escape(part['kind'])}: \d[\d,.]*\s*\S*", part["title"]), part["title"]
            assert part["width"] > 0
            assert part["title"] in bar["title"]
        assert re.match(r"≈\d", bar["total"])
        # The colours are the badges' (a typed prompt's part takes the followup badge's colour).
        badges = timeline.evaluate(BADGE_COLOURS_JS)
        colours = {p["kind"]: p["colour"] for p in bar["parts"]}
        assert colours["dataframe"] == badges["dataframe"] and colours["cell"] == badges["cell"]
        assert colours["user"] == badges["user"]
        assert len({colours[k] for k in ("dataframe", "cell", "user")}) == 3
        # The words beside the bar reach AA on the theme's background.
        ratio = meter.locator(".nba-muted").evaluate(CONTRAST_JS)
        assert ratio >= AA, (theme, ratio)
    finally:
        set_theme(page, "JupyterLab Light")  # the theme is a lab setting: leave it as found
    assert errors.uncaught == [] and errors.console == [], errors


READ_LEGEND_JS = """root => [...root.querySelectorAll('.nba-meter-legend')].map(l => ({
  text: l.textContent,
  items: [...l.querySelectorAll('.nba-legend-item')].map(i => ({
    kind: i.dataset.part, word: i.textContent,
    colour: getComputedStyle(i.querySelector('.nba-swatch')).backgroundColor })),
}))"""


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_one_legend_per_timeline_and_one_colour_per_source_kind(lab: Lab, page: Any, theme: str) -> None:
    """Issue #35 item 3: the bars' meaning is in a compact legend, once per timeline (widget and
    saved HTML alike), and a steer's badge has the colour of its segment (kind ``user``)."""
    slug = theme.split()[-1].lower()
    cells = [
        setup_cell(f"legend-{slug}", '["Pune is warmest.", "Still Pune."]'),
        DATAFRAME_CELL,
        'agent.followup("Which city is warmest?");',
        'await agent.when_idle(); agent.steer("Only in Celsius, please");',
    ]
    errors = PageErrors().watch(page)
    try:
        open_notebook(page, lab.lab_url(lab.write_notebook(f"legend-{slug}", cells), f"legend-{slug}"))
        set_theme(page, theme)
        for i in range(4):
            run_cell(page, i)
        timeline = page.locator('.jp-nbagent-output[data-view="live"] .nba-timeline')
        timeline.locator('.nba-turn[data-id="turn-2"][data-status="completed"]').wait_for()
        timeline.locator(".nba-meter-legend .nba-legend-item").first.wait_for()
        [legend] = timeline.evaluate(READ_LEGEND_JS)  # once, not once per step
        shot(page, f"context-legend-{slug}", timeline)
        kinds = [i["kind"] for i in legend["items"]]
        assert kinds[:3] == ["user", "cell", "dataframe"], kinds  # the meter's order
        assert legend["items"][0]["word"] == "followup · steer"
        assert legend["text"].startswith("tokens in, by source:")
        bars = timeline.evaluate(
            "root => Object.fromEntries([...root.querySelectorAll('.nba-meter-bar [data-part]')]"
            ".map(p => [p.dataset.part, getComputedStyle(p).backgroundColor]))"
        )
        assert {i["kind"]: i["colour"] for i in legend["items"]} == {k: bars[k] for k in kinds}
        steer = timeline.locator('.nba-msg .nba-badge[data-role="steer"]').first
        followup = timeline.locator('.nba-msg .nba-badge[data-role="followup"]').first
        colour = "b => getComputedStyle(b).color"
        assert steer.evaluate(colour) == followup.evaluate(colour) == bars["user"]
        assert steer.evaluate("b => getComputedStyle(b).borderStyle") == "dashed"  # told apart by its border
        ratio = timeline.locator(".nba-meter-legend .nba-muted").evaluate(CONTRAST_JS)
        assert ratio >= AA, (theme, ratio)
    finally:
        set_theme(page, "JupyterLab Light")
    assert errors.uncaught == [] and errors.console == [], errors
