"""No script from an untrusted notebook's saved widget state runs when it is opened (issue 32, item 1).

The attacker's notebook: ``metadata.widgets`` holds an anywidget ``AnyModel`` whose ``_esm`` is a
script, and one output shows that model; the notebook carries no signature, so every cell is
untrusted. Upstream, JupyterLab's widget manager restores saved state whatever the notebook's trust,
and anywidget imports ``_esm`` when the model is made: the script runs at open. The script here
sets a global and requests a listener on 127.0.0.1 that the test runs, so execution is seen, not
guessed from the page's text.

Checked in JupyterLab and Notebook 7, with "Save Widget State Automatically" on and off. The same
notebook signed (trusted) is the control: its script does run in that very setting, which shows the
detector sees execution there.
"""

from __future__ import annotations

import http.server
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CHROMIUM, Lab, shot, start_lab
from notebook_page import open_notebook, run_cell, save

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
HOSTILE_ID = "0badc0de0badc0de0badc0de0badc0de"
RAN_JS = "() => window.__nbagent_esm_ran ?? null"

MANAGER_JS = """async ([index, modelId]) => {
  // The notebook's widget manager, reached through the widget view of cell `index` (a cell run
  // now). Restore the saved state once more, as the manager does when it is made; once that is
  // done, whatever the manager would make of the notebook's saved state is made.
  const panel = window.jupyterapp.shell.currentWidget;
  const cell = panel.content.widgets[index];
  let found = null;
  const visit = (widget) => {
    // jupyterlab-manager's WidgetRenderer keeps its manager in a promise (`manager` is set-only).
    if (widget._manager && widget._manager.promise) found = widget._manager.promise;
    for (const child of widget.children?.() ?? []) visit(child);
  };
  visit(cell.outputArea);
  const manager = found && (await found);
  if (!manager || typeof manager.has_model !== 'function') return 'no widget manager';
  await manager.restoreWidgets(panel.context.model);
  return manager.has_model(modelId);
}"""


class Listener:
    """An HTTP server on 127.0.0.1 that records the path of every request it gets."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.hit = threading.Condition()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with outer.hit:
                    outer.hits.append(self.path)
                    outer.hit.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, tag: str, timeout: float = 90) -> bool:
        with self.hit:
            return self.hit.wait_for(lambda: any(tag in h for h in self.hits), timeout=timeout)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module", params=[False, True], ids=["save-state-off", "save-state-on"])
def state_lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A server with "Save Widget State Automatically" off or on, and its own notebook notary (so
    the control notebook can be signed without touching the user's signatures)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    pytest.importorskip("anywidget")
    pytest.importorskip("ipywidgets")
    base = tmp_path_factory.mktemp("state-lab")
    notary = base / "notary"
    notary.mkdir()
    args = (f"--NotebookNotary.data_dir={notary}",)
    with start_lab(base, save_widget_state=request.param, extra_args=args) as server:
        yield server


def notary_dir(lab: Lab) -> Path:
    """The notary's directory of ``lab`` (beside its notebook root, see ``state_lab``)."""
    return lab.root.parent / "notary"


def anywidget_state(esm: str) -> dict[str, Any]:
    """Saved widget state, as JupyterLab writes it, holding one anywidget ``AnyModel`` with ``esm``."""
    import anywidget

    version = anywidget.AnyWidget._model_module_version.default_value
    layout = f"{HOSTILE_ID}-layout"
    return {
        layout: {
            "model_name": "LayoutModel",
            "model_module": "@jupyter-widgets/base",
            "model_module_version": "2.0.0",
            "state": {},
        },
        HOSTILE_ID: {
            "model_name": "AnyModel",
            "model_module": "anywidget",
            "model_module_version": version,
            "state": {
                "_anywidget_id": "hostile.Widget",
                "_esm": esm,
                "_model_module": "anywidget",
                "_model_module_version": version,
                "_model_name": "AnyModel",
                "_view_module": "anywidget",
                "_view_module_version": version,
                "_view_name": "AnyView",
                "layout": f"IPY_MODEL_{layout}",
            },
        },
    }


def hostile_script(listener: Listener, tag: str) -> str:
    return (
        f"globalThis.__nbagent_esm_ran = {tag!r};\n"
        f"fetch({listener.url + '/ran/' + tag!r}, {{ mode: 'no-cors' }}).catch(() => {{}});\n"
        "export default { render({ el }) { el.textContent = 'hostile widget'; } };\n"
    )


def crafted_notebook(lab: Lab, name: str, esm: str, *, signed: bool) -> str:
    """The attacker's notebook (no signature: every cell untrusted), or the same notebook signed."""
    import nbformat
    from nbformat.sign import NotebookNotary

    nb = nbformat.from_dict(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "execution_count": 1,
                    "id": "shown",
                    "metadata": {},
                    "outputs": [
                        {
                            "output_type": "display_data",
                            "metadata": {},
                            "data": {
                                WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": HOSTILE_ID},
                                "text/plain": "a widget",
                            },
                        }
                    ],
                    "source": "widget",
                },
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "id": "probe",
                    "metadata": {},
                    "outputs": [],
                    "source": "import ipywidgets\nipywidgets.Label('probe')",
                },
            ],
            "metadata": {
                "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                "language_info": {"name": "python"},
                "widgets": {
                    WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": anywidget_state(esm)}
                },
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    if signed:
        NotebookNotary(data_dir=str(notary_dir(lab))).sign(nb)
    (lab.root / name).write_text(nbformat.writes(nb))
    return name


def open_in(page: Any, lab: Lab, name: str, front_end: str) -> None:
    url = lab.lab_url(name, name.replace(".", "-")) if front_end == "lab" else lab.notebook7_url(name)
    open_notebook(page, url)


@pytest.mark.parametrize("front_end", ["lab", "notebook7"])
def test_an_untrusted_notebooks_saved_anywidget_code_never_runs(
    state_lab: Lab, browser: Any, listener: Listener, front_end: str
) -> None:
    tag = uuid.uuid4().hex
    # The control first: the same notebook, signed, runs its script in this very setting.
    control = crafted_notebook(
        state_lab, f"control-{tag}.ipynb", hostile_script(listener, f"control-{tag}"), signed=True
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        open_in(page, state_lab, control, front_end)
        assert listener.wait_for(f"control-{tag}"), "the trusted control's script never ran"
        page.wait_for_function(f"() => window.__nbagent_esm_ran === 'control-{tag}'")
    finally:
        page.close()

    name = crafted_notebook(state_lab, f"hostile-{tag}.ipynb", hostile_script(listener, tag), signed=False)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        open_in(page, state_lab, name, front_end)
        trusted = page.evaluate(
            "() => [...window.jupyterapp.shell.currentWidget.content.model.cells].map(c => c.trusted)"
        )
        assert trusted == [False, False]
        run_cell(page, 1)  # a widget of the user's own, live: the page's widget manager
        page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".widget-label", has_text="probe").wait_for()
        made = page.evaluate(MANAGER_JS, [1, HOSTILE_ID])
        assert (made, page.evaluate(RAN_JS)) == (False, None)  # never made, never ran
        shot(page, f"untrusted-widget-state-{front_end}-{state_lab.root.parent.name}")
        save(page)
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    finally:
        page.close()
    assert not any(tag in h and "control" not in h for h in listener.hits), listener.hits
    # Saved again, the notebook holds no trace of the hostile state (it would be signed with the
    # user's next save once its cells are trusted).
    saved = json.loads((state_lab.root / name).read_text())
    state = saved["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    assert HOSTILE_ID not in state
    assert not any("_esm" in m.get("state", {}) for m in state.values())
