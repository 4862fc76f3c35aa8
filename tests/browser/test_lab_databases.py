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
