"""The lab extension's words go through JupyterLab's translator (domain ``nbagent``): with a
language pack for it (served here by intercepting the translations API, as an installed pack's
would be), the Agent sessions panel and the session tab speak that language; message content and
session labels stay as they are."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Lab, shot
from lab_sessions import write_family
from page_errors import PageErrors
from test_lab_tab_restore import APP_READY_JS

pytestmark = pytest.mark.browser

FRENCH = {
    "": {"domain": "nbagent", "language": "fr-FR", "plural_forms": "nplurals=2; plural=(n > 1);"},
    "Agent sessions": ["Sessions d'agent"],
    "fork": ["bifurcation"],
    "%1 turn": ["%1 tour", "%1 tours"],
    "%1 event": ["%1 événement", "%1 événements"],
    "Open": ["Ouvrir"],
    "Newest": ["Plus récents"],
    "read-only": ["lecture seule"],
    "forked from %1 %2": ["%2, bifurqué de %1"],
    "before turn %1": ["avant le tour %1"],
    "Diff with parent": ["Comparer au parent"],
    "Parent turn (a)": ["Tour du parent (a)"],
}


def test_the_panel_and_the_tab_speak_the_language_of_the_translator(lab: Lab, page: Any) -> None:
    (lab.root / "fr").mkdir()
    parent, child = write_family(lab.root / "fr" / "session.nbagent.sqlite")
    pack = json.dumps({"data": {"nbagent": FRENCH}, "message": ""})
    page.route(
        "**/lab/api/translations/**", lambda route: route.fulfill(body=pack, content_type="application/json")
    )
    errors = PageErrors().watch(page)
    page.goto(f"{lab.url}/lab/workspaces/french/tree/fr?token={lab.token}")
    page.wait_for_function(APP_READY_JS)
    page.evaluate("() => window.jupyterapp.restored")
    page.evaluate("() => window.jupyterapp.commands.execute('nbagent:show-sessions')")
    panel = page.locator('.jp-nbagent-panel[data-folder="fr"][data-count="2"]')
    panel.wait_for()
    assert panel.locator(".jp-nbagent-panel-title").text_content() == "Sessions d'agent"
    fork = panel.locator(f'.jp-nbagent-row[data-session="{child}"]')
    assert fork.locator(".jp-nbagent-row-meta").inner_text().startswith("bifurcation · 3 tours · ")
    assert fork.locator(".jp-nbagent-open").inner_text() == "Ouvrir"

    fork.locator(".jp-nbagent-open").click()
    tab = page.locator(f'.jp-nbagent-tab[data-session="{child}"]')
    line = tab.locator(".jp-nbagent-tab-fork")
    line.wait_for()
    assert line.inner_text() == "avant le tour 2, bifurqué de Where do sales come from?"
    assert line.locator("button.jp-nbagent-link").inner_text() == "Where do sales come from?"
    assert tab.locator(".nba-head .nba-muted").inner_text().endswith(" · lecture seule")
    assert page.locator(".jp-nbagent-session .jp-Toolbar").get_by_text("Plus récents").count() == 1
    shot(page, "tab-translated")
    page.locator(".jp-nbagent-session .jp-Toolbar").get_by_text("Comparer au parent").click()
    pane = tab.locator('.jp-nbagent-diff[data-state="ok"]')
    assert pane.locator('select[data-side="a"]').get_attribute("aria-label") == "Tour du parent (a)"
    line.locator("button.jp-nbagent-link").click()
    page.locator(f'.jp-nbagent-tab[data-session="{parent}"] .nba-turn[data-id="turn-3"]').wait_for()
    assert errors.uncaught == [] and errors.console == [], errors
