"""Keyboard and contrast in the lab extension and the inbox widget (WCAG AA), light and dark: the
contrast ratios are computed in the page from ``getComputedStyle`` colours (alpha composited over
the backgrounds behind them), the focus is followed through real key presses."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import open_notebook, run_cell, set_theme, settle, setup_cell
from page_errors import PageErrors
from test_lab_markdown import write_session
from test_lab_sessions_panel import show_panel

pytestmark = pytest.mark.browser

AA = 4.5
CONTRAST_JS = """e => {
  const parse = c => {  // rgb(a) in 0-255, or color(srgb ...) in 0-1 (what color-mix computes to)
    const v = c.match(/-?[\\d.]+(e-?\\d+)?/g).map(Number);
    const k = c.startsWith('color(') ? 255 : 1;
    return [v[0] * k, v[1] * k, v[2] * k, v.length > 3 ? v[3] : 1];
  };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const layers = [];
  for (let n = e; n; n = n.parentElement) {
    const c = parse(getComputedStyle(n).backgroundColor);
    if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  let bg = [255, 255, 255, 1];
  for (const layer of layers.reverse()) bg = over(layer, bg);
  const fg = over(parse(getComputedStyle(e).color), bg);
  const lum = c => { const [r, g, b] = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return Math.round((hi + 0.05) / (lo + 0.05) * 100) / 100;
}"""
"""The contrast ratio of an element's text against what is painted behind it."""
PANEL_TEXT = ".jp-nbagent-row-label, .jp-nbagent-row-meta, .jp-nbagent-row-file, .jp-nbagent-button span"
TAB_TEXT = ".jp-nbagent-tab-status, .jp-nbagent-jump-label, .nba-head .nba-muted, .nba-head .nba-title, .nba-pill, .nba-raw-toggle"


def low_contrast(page: Any, selector: str) -> list[tuple[str, float]]:
    """Visible elements of ``selector`` whose text is below AA, with their ratio."""
    found = page.locator(selector).evaluate_all(
        f"els => els.filter(e => e.offsetParent && e.textContent.trim())"
        f".map(e => [e.className + ': ' + e.textContent.trim().slice(0, 30), ({CONTRAST_JS})(e)])"
    )
    assert found, f"nothing visible matches {selector}"
    return [(name, ratio) for name, ratio in found if ratio < AA]


def test_the_panel_and_tab_reach_aa_in_both_themes_and_the_keyboard_works(lab: Lab, page: Any) -> None:
    sid = write_session(lab.root / "a11y.nbagent.sqlite")
    errors = PageErrors().watch(page)
    open_notebook(page, lab.lab_url(lab.write_notebook("a11y", []), "a11y"))
    show_panel(page)
    row = page.locator(f'.jp-nbagent-row[data-session="{sid}"]')
    row.wait_for()
    page.evaluate(
        "([file, id]) => window.jupyterapp.commands.execute('nbagent:open-session', {file, id})",
        ["a11y.nbagent.sqlite", sid],
    )
    page.locator(".jp-nbagent-tab .nba-answer").wait_for(state="attached")
    page.evaluate(f"() => window.jupyterapp.shell.activateById('nbagent-session-{sid}')")
    page.locator(".jp-nbagent-tab .nba-answer").wait_for()
    failures: dict[str, list[tuple[str, float]]] = {}
    try:
        for theme in ("JupyterLab Light", "JupyterLab Dark"):
            set_theme(page, theme)
            page.wait_for_function(  # the theme's stylesheet applied, not just its attribute
                "light => (getComputedStyle(document.querySelector('.jp-nbagent-panel')).backgroundColor"
                " === 'rgb(255, 255, 255)') === light",
                arg="Light" in theme,
            )
            page.mouse.move(0, 0)
            failures[f"{theme} panel"] = low_contrast(page, f"#nbagent-sessions :is({PANEL_TEXT})")
            failures[f"{theme} tab"] = low_contrast(page, f".jp-nbagent-tab :is({TAB_TEXT})")
            row.hover()
            failures[f"{theme} hovered row"] = low_contrast(page, f".jp-nbagent-row:hover :is({PANEL_TEXT})")
            page.mouse.move(0, 0)
            row.focus()
            failures[f"{theme} focused row"] = low_contrast(page, f".jp-nbagent-row:focus :is({PANEL_TEXT})")
            shot(page, f"a11y-{theme.split()[-1].lower()}")
    finally:
        set_theme(page, "JupyterLab Light")
    assert {k: v for k, v in failures.items() if v} == {}

    # The focused row shows a ring of its own, not the hover background.
    row.focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")  # keyboard focus: :focus-visible applies
    ring = row.evaluate(
        "e => [getComputedStyle(e).outlineStyle, parseFloat(getComputedStyle(e).outlineWidth)]"
    )
    assert ring[0] != "none" and ring[1] >= 2, ring

    # Enter on the row's "Markdown" button exports; it does not open (or re-activate) the tab.
    page.evaluate(
        "() => window.jupyterapp.shell.activateById(window.jupyterapp.shell.widgets('main').next().value.id)"
    )
    settle(page)  # the activated widget's own focus is taken before the button's below
    before = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
    row.locator(".jp-nbagent-export").focus()
    with page.expect_download() as download:
        page.keyboard.press("Enter")
    assert download.value.suggested_filename.endswith(".md")
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.id") == before
    # Enter on the row itself opens the timeline.
    row.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => window.jupyterapp.shell.currentWidget.id === 'nbagent-session-{sid}'")
    assert errors.uncaught == [] and errors.console == [], errors


CLIPPED_JS = """heads => heads.map(h => {
  const p = h.querySelector('.nba-pill').getBoundingClientRect();
  const box = (h.closest('.jp-OutputArea-output, .jp-nbagent-tab') || h).getBoundingClientRect();
  const b = h.getBoundingClientRect();
  return p.left < b.left || p.right > b.right + 0.5 || p.right > box.right + 0.5 || h.scrollWidth > h.clientWidth;
})"""
"""For each ``.nba-head``: whether its status pill sticks out of it (or of the output it is in)."""


def test_the_timeline_head_keeps_its_status_pill_whole_at_700_px(lab: Lab, page: Any) -> None:
    sid = write_session(lab.root / "narrow.nbagent.sqlite")
    page.set_viewport_size({"width": 700, "height": 800})
    cells = [setup_cell("narrow-widgets", '["ok"]'), 'agent.followup("a question long enough to matter");']
    open_notebook(page, lab.lab_url(lab.write_notebook("narrow", cells), "narrow"))
    run_cell(page, 0)
    run_cell(page, 1)
    page.locator('.nba-timeline .nba-pill[data-status="completed"]').first.wait_for()
    heads = page.locator(".jp-Notebook .nba-head")
    assert heads.count() >= 2  # the inbox's and the timeline's
    shot(page, "a11y-700px-widgets")
    assert heads.evaluate_all(CLIPPED_JS) == [False] * heads.count()
    page.evaluate(
        "([file, id]) => window.jupyterapp.commands.execute('nbagent:open-session', {file, id})",
        ["narrow.nbagent.sqlite", sid],
    )
    head = page.locator(".jp-nbagent-tab .nba-head")
    head.locator(".nba-pill").wait_for()
    shot(page, "a11y-700px-tab")
    assert head.evaluate_all(CLIPPED_JS) == [False]


def test_removing_an_inbox_item_by_keyboard_keeps_the_focus_in_the_inbox(lab: Lab, page: Any) -> None:
    cells = [
        setup_cell("focus", "[]"),
        "for note in ('one', 'two', 'three'):\n    agent.inject(cell_text(note, label=note))",
    ]
    open_notebook(page, lab.lab_url(lab.write_notebook("focus", cells), "focus"))
    run_cell(page, 0)
    run_cell(page, 1)
    inbox = page.locator('.nba-inbox[data-live="true"][data-pending="3"]')
    inbox.wait_for()
    inbox.locator(".nba-inbox-item").nth(1).locator(".nba-remove").focus()
    page.keyboard.press("Enter")
    page.locator('.nba-inbox[data-pending="2"]').wait_for()
    assert focused_item(page) == ("SUMMARY", "three")  # the item now in the removed one's place
    page.keyboard.press("Tab")  # to its remove button
    page.keyboard.press("Enter")
    page.locator('.nba-inbox[data-pending="1"]').wait_for()
    assert focused_item(page) == ("SUMMARY", "one")  # the last item left


def focused_item(page: Any) -> tuple[str, str | None]:
    """The focused element's tag and the label of the inbox item it is in (``None``: not in one)."""
    tag, label = page.evaluate(
        "() => { const a = document.activeElement; const i = a.closest('.nba-inbox-item');"
        " return [a.tagName, i ? i.querySelector('.nba-label').textContent : null]; }"
    )
    return tag, label


def test_approve_and_deny_reach_aa_in_both_themes_as_jupyterlab_buttons(lab: Lab, page: Any) -> None:
    """Approve and Deny are JupyterLab's accept and warn buttons; their white text reaches AA on
    them in the light and the dark theme, at rest and under the mouse."""
    cells = [
        "%load_ext nbagent\nfrom nbagent.models import Response, ScriptedModel, ToolCall\n"
        "from nbagent.notebook import current_agent\n"
        "current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall('run_code', {'code': 'x = 1'})]),"
        " Response('done')]))",
        "%followup go",
    ]
    errors = PageErrors().watch(page)
    open_notebook(page, lab.lab_url(lab.write_notebook("approve-contrast", cells), "approve-contrast"))
    run_cell(page, 0)
    run_cell(page, 1)
    prompt = page.locator('.nba-approval[data-state="pending"]')
    prompt.wait_for()
    approve, deny = (
        prompt.locator('button[data-action="approve"]'),
        prompt.locator('button[data-action="deny"]'),
    )
    assert "jp-mod-accept" in (approve.get_attribute("class") or "")
    assert "jp-mod-warn" in (deny.get_attribute("class") or "")
    ratios: dict[str, float] = {}
    try:
        for theme in ("JupyterLab Light", "JupyterLab Dark"):
            set_theme(page, theme)
            page.wait_for_function(
                "light => (getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor"
                " === 'rgb(255, 255, 255)') === light",
                arg="Light" in theme,
            )
            slug = theme.split()[-1].lower()
            page.mouse.move(0, 0)
            for name, button in (("approve", approve), ("deny", deny)):
                ratios[f"{slug} {name}"] = button.evaluate(CONTRAST_JS)
                button.hover()
                ratios[f"{slug} {name} hovered"] = button.evaluate(CONTRAST_JS)
                page.mouse.move(0, 0)
            shot(page, f"a11y-approval-{slug}", prompt)
    finally:
        set_theme(page, "JupyterLab Light")
    assert {k: v for k, v in ratios.items() if v < AA} == {}, ratios
    assert errors.uncaught == [] and errors.console == [], errors
