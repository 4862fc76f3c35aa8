"""The JupyterLab extension in Debian's Chromium: saved timelines without a kernel (JupyterLab and
Notebook 7, default settings), the live widget while the kernel lives, inert hostile content, and
nbconvert's HTML of a notebook saved with widget state."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CHROMIUM, Lab, shot, start_lab
from lab_sessions import XSS
from notebook_page import open_notebook, run_cell, save

TIMELINE_MIME = "application/vnd.nbagent.timeline+json"
NO_KERNELS = ("--KernelSpecManager.allowed_kernelspecs=no-kernel-here",)
"""A server on which no kernel can start: the notebook is opened with no kernel at all."""

CELLS = [
    "%load_ext nbagent",
    f"%%inject --label probe\n{XSS}",
    "%followup --wait Which city is warmest?",
    "%agent show",
]

XSS_RAN_JS = "() => window.__nbagent_xss === undefined ? null : window.__nbagent_xss"


@pytest.fixture(scope="module")
def plain_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with its default settings ("Save Widget State Automatically" off)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with start_lab(tmp_path_factory.mktemp("plain-lab"), save_widget_state=False) as server:
        yield server


def execute_and_save(page: Any, lab: Lab, name: str, workspace: str) -> dict[str, Any]:
    """Open ``name`` in JupyterLab, run every cell, save; returns the saved notebook."""
    open_notebook(page, lab.lab_url(name, workspace))
    for i in range(len(CELLS)):
        run_cell(page, i)
    timeline = page.locator(".jp-nbagent-output").last
    timeline.wait_for()
    save(page)
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    return json.loads((lab.root / name).read_text())


def dismiss_kernel_dialog(page: Any) -> None:
    """No kernel can start: close the kernel chooser, leaving the notebook without a kernel."""
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for()
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")


def check_saved_timeline(page: Any, name: str) -> Any:
    """The painted timeline of the saved `%agent show` output: its turn, messages and answer."""
    view = page.locator('.jp-nbagent-output[data-view="saved"] .nba-timeline').last
    turn = view.locator('.nba-turn[data-id="turn-1"][data-status="completed"]')
    turn.wait_for()
    kinds = turn.locator(".nba-msg").evaluate_all("els => els.map(e => e.dataset.kind)")
    assert kinds == ["cell", "user"], kinds
    assert "Which city is warmest?" in turn.inner_text()
    assert page.get_by_text("model not found").count() == 0
    # The hostile context is shown as the text it is, and nothing of it ran or broke out.
    turn.locator('.nba-msg[data-kind="cell"] summary').click()
    detail = turn.locator('.nba-msg[data-kind="cell"] .nba-detail pre')
    assert detail.inner_text().strip() == XSS
    assert page.evaluate(XSS_RAN_JS) is None
    assert page.locator('.jp-OutputArea img[src="x"], .jp-OutputArea script:not([type])').count() == 0
    return view


def test_a_saved_timeline_shows_without_a_kernel_in_jupyterlab_and_notebook_7(
    plain_lab: Lab, browser: Any, tmp_path: Path
) -> None:
    name = plain_lab.write_notebook("saved", CELLS)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        nb = execute_and_save(page, plain_lab, name, "saved")
        # While the kernel lives, the output hands over to the live widget.
        live = page.locator('.jp-nbagent-output[data-view="live"]').last
        live.wait_for()
        assert live.locator(".lm-Widget .nba-timeline").count() == 1
        shot(page, "lab-01-live-widget")
        page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:shutdown')")
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel == null"
        )
    finally:
        page.close()
    outputs = nb["cells"][3]["outputs"]
    assert any(TIMELINE_MIME in o.get("data", {}) for o in outputs)
    assert "widgets" not in nb["metadata"]  # default settings: no widget state was saved

    # Reopened the usual way: a new kernel starts, which does not know the saved widgets' models.
    again = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        open_notebook(again, plain_lab.lab_url(name, "new-kernel"))
        painted = again.locator('.jp-nbagent-output[data-view="saved"]')
        painted.last.locator('.nba-turn[data-id="turn-1"][data-status="completed"]').wait_for()
        assert painted.count() == 3  # the live turn view of %followup, and %agent show's inbox and timeline
        assert again.locator(".jp-nbagent-output", has_text="model not found").count() == 0
        assert again.evaluate(XSS_RAN_JS) is None
        shot(again, "lab-02a-saved-timeline-new-kernel")
    finally:
        again.close()

    with start_lab(tmp_path, root=plain_lab.root, save_widget_state=False, extra_args=NO_KERNELS) as bare:
        lab_page = browser.new_page(viewport={"width": 1280, "height": 1000})
        try:
            lab_page.goto(bare.lab_url(name, "no-kernel"))
            dismiss_kernel_dialog(lab_page)
            view = check_saved_timeline(lab_page, name)
            assert (
                lab_page.evaluate(
                    "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel ?? null"
                )
                is None
            )
            view.scroll_into_view_if_needed()
            shot(lab_page, "lab-02-saved-timeline-no-kernel")
        finally:
            lab_page.close()
        nb7 = browser.new_page(viewport={"width": 1280, "height": 1000})
        try:
            nb7.goto(bare.notebook7_url(name))
            dismiss_kernel_dialog(nb7)
            view = check_saved_timeline(nb7, name)
            view.scroll_into_view_if_needed()
            shot(nb7, "lab-03-notebook7-saved-timeline-no-kernel")
        finally:
            nb7.close()


def test_nbconvert_html_shows_the_static_timeline_when_widget_state_was_saved(lab: Lab, page: Any) -> None:
    """The suite's lab saves widget state; the timeline's models are left out of it, so nbconvert's
    HTML shows the static text/html timeline instead of a widget view that needs a CDN."""
    name = lab.write_notebook("converted", CELLS)
    nb = execute_and_save(page, lab, name, "converted")
    state = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    timeline_ids = {
        o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if TIMELINE_MIME in o.get("data", {}) and "application/vnd.jupyter.widget-view+json" in o["data"]
    }
    assert timeline_ids and not timeline_ids & set(state)  # widget state was saved, without them
    out = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--stdout", str(lab.root / name)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for model_id in timeline_ids:
        assert model_id not in out  # no widget view for the timeline outputs
    assert out.count('class="nbagent nba-timeline"') >= 1
    assert "Which city is warmest?" in out
    assert "<img src=x" not in out and "&lt;img src=x onerror=" in out
    static = page.context.new_page()
    try:
        static.set_content(out)
        static.locator(".nba-timeline .nba-turn").first.wait_for()
        assert static.evaluate(XSS_RAN_JS) is None
        shot(static, "lab-04-nbconvert-html", static.locator(".nba-timeline").first)
    finally:
        static.close()
