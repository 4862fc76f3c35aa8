"""An untrusted notebook cannot run script through the timeline renderer (issue 17, item 1).

The crafted notebook: one output carrying a valid timeline bundle and a widget view whose model, in
the notebook's saved widget state, is an HTML widget holding ``<img src=x onerror=…>``; every cell
untrusted. The renderer is ``safe`` and must not hand such an output to the (unsafe) widget
renderer: "Create New View for Cell Output" and copy/paste of the cell paint the bundle, and nothing
of the widget's HTML reaches the page. A trusted output of the same page (a cell run now) still
hands over to its live widget, which shows the path is really there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CHROMIUM, Lab, shot, start_lab
from lab_sessions import write_session
from notebook_page import open_notebook, run_cell
from page_errors import PageErrors

TIMELINE_MIME = "application/vnd.nbagent.timeline+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
FLAG_JS = "() => window.__nbagent_xss === undefined ? null : window.__nbagent_xss"
HOSTILE_HTML = "<img src=x onerror=\"window.__nbagent_xss=1;document.title='pwned'\">"
CONTROL_HTML = '<b class="nba-control" data-nba-painted="true">live control widget</b>'
"""The control's live widget: its element carries the mark nbagent's widget modules set once painted
(the renderer shows a live view on that mark, never on the words it holds)."""
INJECTED = ".jp-OutputArea img[src='x'], .jp-OutputArea script:not([type])"


@pytest.fixture(scope="module")
def plain_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    pytest.importorskip("ipywidgets")
    with start_lab(tmp_path_factory.mktemp("untrusted-lab"), save_widget_state=False) as server:
        yield server


def timeline_bundle(tmp: Path) -> dict[str, Any]:
    """A real, valid timeline bundle: the view model of a session an echo model answered."""
    from nbagent import read_events
    from nbagent.views import timeline_json

    path = tmp / "bundle.nbagent.sqlite"
    sid = write_session(path, ["Which city is warmest?"], context="Prices are in EUR.")
    return timeline_json(read_events(path, sid))


def html_widget_state(model_id: str, value: str) -> dict[str, Any]:
    """Saved widget state (as JupyterLab writes it) holding one HTML widget with ``value``."""
    layout, style = f"{model_id}-layout", f"{model_id}-style"
    return {
        layout: {
            "model_name": "LayoutModel",
            "model_module": "@jupyter-widgets/base",
            "model_module_version": "2.0.0",
            "state": {},
        },
        style: {
            "model_name": "HTMLStyleModel",
            "model_module": "@jupyter-widgets/controls",
            "model_module_version": "2.0.0",
            "state": {},
        },
        model_id: {
            "model_name": "HTMLModel",
            "model_module": "@jupyter-widgets/controls",
            "model_module_version": "2.0.0",
            "state": {
                "_dom_classes": [],
                "layout": f"IPY_MODEL_{layout}",
                "style": f"IPY_MODEL_{style}",
                "value": value,
            },
        },
    }


def control_cell(bundle: dict[str, Any]) -> str:
    """A cell that, run now, shows a trusted output of the same shape with a harmless HTML widget."""
    return (
        "import json, ipywidgets\n"
        "from IPython.display import display\n"
        f"w = ipywidgets.HTML({CONTROL_HTML!r})\n"
        f"bundle = json.loads({json.dumps(bundle)!r})\n"
        "display({\n"
        f"    {WIDGET_VIEW!r}: {{'version_major': 2, 'version_minor': 0, 'model_id': w.model_id}},\n"
        f"    {TIMELINE_MIME!r}: bundle,\n"
        "    'text/plain': 'control',\n"
        "}, raw=True)"
    )


def crafted_notebook(lab: Lab, name: str, bundle: dict[str, Any]) -> str:
    """The attacker's notebook (unsigned, so every cell is untrusted) plus the control cell."""
    model_id = "4a1b2c3d4e5f40718293a4b5c6d7e8f9"
    output = {
        "output_type": "display_data",
        "metadata": {},
        "data": {
            WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": model_id},
            TIMELINE_MIME: bundle,
            "text/plain": "an agent timeline",
        },
    }
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": 1,
                "id": "hostile",
                "metadata": {"trusted": False},
                "outputs": [output],
                "source": "%agent show",
            },
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "control",
                "metadata": {"trusted": False},
                "outputs": [],
                "source": control_cell(bundle),
            },
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "widgets": {
                WIDGET_STATE: {
                    "version_major": 2,
                    "version_minor": 0,
                    "state": html_widget_state(model_id, HOSTILE_HTML),
                }
            },
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (lab.root / name).write_text(json.dumps(nb, indent=1))
    return name


def command(page: Any, name: str, cell: int) -> None:
    page.evaluate(
        """async ([name, cell]) => {
          const panel = window.jupyterapp.shell.currentWidget;
          panel.content.activeCellIndex = cell;
          await window.jupyterapp.commands.execute(name);
        }""",
        [name, cell],
    )


def test_an_untrusted_notebooks_saved_widget_html_never_runs_through_the_timeline_renderer(
    plain_lab: Lab, browser: Any, tmp_path: Path
) -> None:
    name = crafted_notebook(plain_lab, "crafted.ipynb", timeline_bundle(tmp_path))
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    errors = PageErrors().watch(page)
    try:
        open_notebook(page, plain_lab.lab_url(name, "crafted"))
        notebook = ".jp-NotebookPanel"
        page.locator(f'{notebook} .jp-nbagent-output[data-view="saved"] .nba-turn').first.wait_for()
        trusted = page.evaluate(
            "() => [...window.jupyterapp.shell.currentWidget.content.model.cells].map(c => c.trusted)"
        )
        assert trusted == [False, False]
        title = page.title()

        # The control: a trusted output run now hands over to its live widget in this very page.
        run_cell(page, 1)
        page.locator(".jp-nbagent-output[data-view='live'] .nba-control").first.wait_for()

        # The attack: a new view of the hostile output, and the hostile cell copied and pasted.
        command(page, "notebook:create-output-view", 0)
        command(page, "notebook:copy-cell", 0)
        command(page, "notebook:paste-cell-below", 0)
        # Then the same for the control, after the hostile ones: once its views are live, the
        # hostile views have had every chance to go live too.
        command(page, "notebook:create-output-view", 2)
        command(page, "notebook:copy-cell", 2)
        command(page, "notebook:paste-cell-below", 2)
        views = page.locator(".jp-LinkedOutputView")
        assert views.count() == 2
        views.nth(1).locator(".jp-nbagent-output[data-view='live'] .nba-control").wait_for()
        shot(page, "untrusted-timeline-views")

        assert page.evaluate(FLAG_JS) is None
        cells = page.locator(f"{notebook} .jp-Cell")
        for where in [cells.nth(0), cells.nth(1), views.nth(0)]:  # the hostile output, pasted, viewed
            painted = where.locator(".jp-nbagent-output")
            assert painted.get_attribute("data-view") == "saved"
            assert painted.locator(".nba-turn").count() == 1
        assert page.title() == title
        assert page.locator(INJECTED).count() == 0
        assert page.locator("img[src='x']").count() == 0
        assert errors.uncaught == [] and errors.console == [], errors  # e.g. no failed load of `x`
    finally:
        page.close()


def test_a_live_view_without_the_painted_mark_never_replaces_the_painted_timeline(
    plain_lab: Lab, browser: Any, tmp_path: Path
) -> None:
    """The renderer shows a live widget when its module marks itself painted, not when the view has
    any element (an error message, a widget that is not nbagent's): the painted timeline stays."""
    unmarked = '<b class="nba-unmarked">a widget view with no painted mark</b>'
    cell = control_cell(timeline_bundle(tmp_path)).replace(repr(CONTROL_HTML), repr(unmarked))
    name = plain_lab.write_notebook("unmarked", [cell])
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    errors = PageErrors().watch(page)
    try:
        open_notebook(page, plain_lab.lab_url(name, "unmarked"))
        run_cell(page, 0)
        out = page.locator(".jp-nbagent-output")
        out.locator(".nba-unmarked").wait_for(state="attached")  # the widget view did render, hidden
        assert out.get_attribute("data-view") == "saved"
        assert out.locator(".nba-turn").count() == 1 and out.locator(".nba-turn").is_visible()
        assert not out.locator(".nba-unmarked").is_visible()
        assert errors.uncaught == [] and errors.console == [], errors
    finally:
        page.close()
