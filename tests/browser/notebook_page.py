"""Driving a notebook page in JupyterLab or Notebook 7 through its exposed application object."""

from __future__ import annotations

from typing import Any

READY_JS = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session
    && panel.sessionContext.session.kernel;
  return !!kernel && kernel.status === "idle" && kernel.connectionStatus === "connected";
}"""

RUN_JS = """async (index) => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  panel.content.activeCellIndex = index;
  await app.commands.execute("notebook:run-cell");
}"""

OUTPUT_TEXT_JS = """(index) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[index];
  return cell.outputArea.node.innerText;
}"""


def open_notebook(page: Any, url: str) -> None:
    """Open a notebook and wait until its kernel is connected and idle."""
    page.goto(url)
    page.wait_for_function(READY_JS, timeout=90_000, polling=200)


def run_cell(page: Any, index: int) -> None:
    """Run cell ``index`` and wait for its execution to finish (not for the agent's turn)."""
    page.evaluate(RUN_JS, index)


def run_cell_async(page: Any, index: int) -> None:
    """Start running cell ``index`` without waiting for it."""
    page.evaluate(f"(i) => {{ ({RUN_JS})(i); }}", index)


def output_text(page: Any, index: int) -> str:
    return str(page.evaluate(OUTPUT_TEXT_JS, index))


def settle(page: Any) -> None:
    """Let two animation frames pass: focus a widget takes in a frame of its own (a notebook
    activated focuses its active cell) is then taken, and cannot move a focus given after."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def save(page: Any) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")


def set_theme(page: Any, theme: str) -> None:
    page.evaluate(f"() => window.jupyterapp.commands.execute('apputils:change-theme', {{theme: {theme!r}}})")
    light = "true" if "Light" in theme else "false"
    page.wait_for_selector(f'body[data-jp-theme-light="{light}"]', state="attached")
    # JupyterLab removes its splash screen 200 ms after a theme loads, with a bare removeChild: a
    # second change inside that time leaves two removals pending and the second throws in the page.
    # Wait for the splash to go, as a person clicking the menu would.
    page.wait_for_selector("#jupyterlab-splash", state="detached")


def republished(page: Any, generation: int) -> None:
    """Wait until both widgets' outputs were re-published ``generation - 1`` times (once per idle)."""
    for widget in ("nba-inbox", "nba-timeline"):
        page.locator(f'.{widget}[data-generation="{generation}"]').first.wait_for()


def kinds(locator: Any, count: int | None = None) -> list[str]:
    """The ``data-kind`` of every element the locator matches, in document order.

    With ``count``, first wait (retrying) until that many match: a re-published output re-renders
    its view, so an immediate read could see the view between two renders.
    """
    if count is not None:
        from playwright.sync_api import expect

        expect(locator).to_have_count(count)
    return [str(k) for k in locator.evaluate_all("els => els.map(e => e.dataset.kind)")]


def setup_cell(name: str, responses: str) -> str:
    """The first cell of every test notebook: a scripted agent in a file beside the notebook, shown."""
    return f"""\
import json, pathlib
import pandas as pd
import nbagent
from nbagent import UserMessage
from nbagent.context import dataframe, cell_text, variable
from nbagent.models import ScriptedModel, Response, ToolCall
from nbagent.widgets import show

model = ScriptedModel({responses})
agent = nbagent.open_session("{name}.nbagent.sqlite", model=model)
inbox_widget, timeline_widget = show(agent)"""
