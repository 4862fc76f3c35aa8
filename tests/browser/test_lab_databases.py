"""A team's PostgreSQL store in the Agent sessions panel (issue #34), in Debian's Chromium: the lab
server is told of the database by name (``c.NbagentServer.databases``), the panel lists it as a
root beside the folder's files, its session opens in the normal tab, and a turn another process
writes arrives in that tab (the tab waits on the server's one listener of the database)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CHROMIUM, Lab, shot, start_lab
from lab_sessions import XSS, write_session
from page_errors import PageErrors
from test_lab_sessions_panel import show_panel

pytestmark = pytest.mark.browser

XSS_RAN_JS = "() => window.__nbagent_xss === undefined ? null : window.__nbagent_xss"
WRITER = """
import asyncio, sys, nbagent
async def main():
    agent = nbagent.resume_session(sys.argv[1], sys.argv[2], model="echo")
    await agent.run("Second question, from another kernel")
    await agent.close()
asyncio.run(main())
"""


@pytest.fixture(scope="module")
def team_url(pg_cluster) -> str:
    return pg_cluster.url(schema=f"lab_{os.getpid()}")


@pytest.fixture(scope="module")
def db_lab(tmp_path_factory: pytest.TempPathFactory, team_url: str) -> Iterator[Lab]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    base = tmp_path_factory.mktemp("db-lab")
    config = base / "config"
    config.mkdir()
    settings = {"NbagentServer": {"databases": {"team": team_url}, "serve_nbagent_db": False}}
    (config / "jupyter_server_config.json").write_text(json.dumps(settings))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_CONFIG_DIR", str(config))
        mp.delenv("NBAGENT_DB", raising=False)
        with start_lab(base, save_widget_state=False) as server:
            yield server


def test_the_panel_lists_a_database_opens_its_session_and_follows_another_process_write(
    db_lab: Lab, page: Any, team_url: str
) -> None:
    sid = write_session(team_url, [f"First question {XSS}"])
    errors = PageErrors().watch(page)
    page.goto(f"{db_lab.url}/lab/workspaces/db?token={db_lab.token}")
    show_panel(page)
    root = page.locator('.jp-nbagent-db[data-db="team"]')
    root.wait_for()
    assert root.locator(":scope > .jp-nbagent-row-label").inner_text() == "team"  # its name, never its URL
    assert root.get_attribute("aria-expanded") == "false"
    root.locator(":scope > .jp-nbagent-row-label").click()
    row = page.locator(f'.jp-nbagent-row[data-db="team"][data-session="{sid}"]')
    row.wait_for()
    assert root.get_attribute("aria-expanded") == "true" and row.get_attribute("aria-level") == "2"
    assert row.locator(".jp-nbagent-row-label").inner_text() == f"First question {XSS}"  # as text
    assert row.locator(".jp-nbagent-row-meta").inner_text().startswith("1 turn · ")
    shot(page, "panel-database-root")

    row.dblclick()
    tab = page.locator(f'.jp-nbagent-tab[data-db="team"][data-session="{sid}"]')
    tab.locator('.nba-turn[data-id="turn-1"]').wait_for()
    tab.locator(".jp-nbagent-tab-status[data-state='ok']").wait_for()
    assert "team · following" in tab.locator(".jp-nbagent-tab-status").inner_text()

    writer = subprocess.run(
        [sys.executable, "-c", WRITER, team_url, sid], capture_output=True, text=True, timeout=120
    )
    assert writer.returncode == 0, writer.stderr
    turn = tab.locator('.nba-turn[data-id="turn-2"]')
    turn.wait_for()
    assert "Second question, from another kernel" in turn.inner_text()
    shot(page, "tab-database-follows")

    html = page.content()
    assert "postgresql://" not in html and "nbagent-pg-" not in html  # (the URL, or its socket folder)
    assert page.evaluate(XSS_RAN_JS) is None
    assert errors.uncaught == [] and errors.console == [], errors


def test_a_restart_mid_turn_shows_the_true_end_of_a_database_sessions_turn(
    db_lab: Lab, page: Any, team_url: str
) -> None:
    """A live cell of a session in a database names no file: after a kernel restart the page asks
    the databases the server serves for the session, and the one holding it answers."""
    from notebook_page import open_notebook, run_cell
    from test_restart_browser import RESTART_JS, SETUP, cell

    name = db_lab.write_notebook(
        "db-restart", [f"%load_ext nbagent\n%agent --db {team_url} new", SETUP, "%followup go"]
    )
    errors = PageErrors().watch(page)
    open_notebook(page, db_lab.lab_url(name, "db-restart"))
    run_cell(page, 0)
    run_cell(page, 1)
    run_cell(page, 2)  # returns at once; the turn waits for an approval
    cell(page, 2).locator('.nba-approval[data-state="pending"]').wait_for()
    bundle = page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.widgets[2].model.outputs.toJSON()"
        ".map(o => (o.data || {})['application/vnd.nbagent.timeline+json']).find(Boolean)"
    )
    assert bundle["session"]["file"] is None and bundle["status"] == "running"  # in a database

    page.evaluate(RESTART_JS)
    cell(page, 2).locator(".jp-nbagent-output").get_by_text("turn 1 · done").wait_for(timeout=60_000)
    cell(page, 2).get_by_text("canceled (closed)").first.wait_for()
    assert cell(page, 2).locator(".nba-approval").count() == 0
    shot(page, "restart-database-true-end", cell(page, 2))
    ours = [e for e in errors.uncaught + errors.console if "nbagent" in e or "nba-" in e]
    assert ours == [], errors
