"""The one hostile corpus (``tests/hostile.json``) through every output path, in Debian's Chromium:
no payload runs, loads, links or restyles anything, and the text shows as written.

Paths: the live cell (the turn's view, then its HTML with the approval decided), the approval
prompt, the timeline and inbox widgets, ``%agent transcript``, the panel's Markdown export and
``nbagent transcript`` (both shown as a trusted Markdown output, the way a user would display
them), the static HTML of saved outputs, the exported HTML page, the session tab (whose assistant answer
is rendered as Markdown through JupyterLab's sanitizer; the timeline widget's through a tree of data
built with DOM calls) and the sessions panel. Each payload sets ``window.__nbagent_xss`` to its id, so a failure names the payload.
"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Lab, shot
from hostile import FLAG_JS, ITEMS, same_text
from hostile_session import ALL, MODEL_NAME, TOOL_NAME, write_hostile_session
from notebook_page import open_notebook, run_cell
from page_errors import PageErrors

import nbagent
from nbagent.views import inbox_html, inbox_model, live_turn_html, timeline_html, timeline_json
from nbagent.views.escape import visible_controls

pytestmark = pytest.mark.browser

BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
"""A bidirectional control, raw (every view shows each as a visible mark instead)."""
INJECTED = (
    "img, script, iframe, object, embed, u, [onerror], [onload], [srcdoc], "
    "a[href^='javascript'], a[href^='JAVASCRIPT'], a[href='x'], mjx-container"
)
"""Elements a payload would have made (``mjx-container``: text typeset as math)."""
TEXT_JS = """els => els.map(e => {
  const copy = e.cloneNode(true);
  for (const br of copy.querySelectorAll("br")) br.replaceWith("\\n");
  return copy.textContent;
})"""
"""The text of each element, collapsed parts included, a line break where a ``<br>`` is."""
PROMPT = ITEMS["md-image"]
FILE = "hostile.nbagent.sqlite"
NOTEBOOK = [
    f"""\
%load_ext nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.context import cell_text
from nbagent.notebook import current_agent
ALL = {ALL!r}
agent = current_agent()
agent.set_model(ScriptedModel([Response(tool_calls=[ToolCall('run_code', {{'code': ALL}})]), ALL], name={MODEL_NAME!r}))
agent.inject(cell_text(ALL, label={ITEMS["script"]!r}))""",
    f"%%followup\n{PROMPT}",
    f"for text in {list(ITEMS.values())!r}:\n    agent.inject(cell_text(text, label=text))",
    "%agent show",
    "%agent transcript",
    "from IPython.display import Markdown\nMarkdown(open('exported.md', encoding='utf-8').read())",
    "from IPython.display import Markdown\nMarkdown(open('cli.md', encoding='utf-8').read())",
]


@pytest.fixture(scope="module")
def hostile(lab: Lab) -> str:
    """The hostile session in the lab's root, and its Markdown exported as the panel and the CLI do."""
    sid = write_hostile_session(lab.root / FILE)
    query = urllib.parse.urlencode({"file": FILE, "format": "md", "token": lab.token})
    with urllib.request.urlopen(f"{lab.url}/nbagent/api/sessions/{sid}/transcript?{query}") as r:
        (lab.root / "exported.md").write_bytes(r.read())
    cli = subprocess.run(
        [sys.executable, "-m", "nbagent", "transcript", FILE], cwd=lab.root, capture_output=True, check=True
    )
    (lab.root / "cli.md").write_bytes(cli.stdout)
    return sid


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def run_turn(page: Any, lab: Lab, name: str, *, decide: bool = True) -> None:
    """Open a notebook of :data:`NOTEBOOK`, start the hostile turn; with ``decide``, deny its
    ``run_code`` and wait for the turn's end."""
    open_notebook(page, lab.lab_url(lab.write_notebook(name, NOTEBOOK), name))
    run_cell(page, 0)
    run_cell(page, 1)
    prompt = cell(page, 1).locator('.nba-approval[data-state="pending"]')
    prompt.wait_for()
    if decide:
        prompt.locator('button[data-action="deny"]').click()
        cell(page, 1).get_by_text("turn 1 · done").wait_for()


def run_to(page: Any, lab: Lab, name: str, last: int) -> Any:
    """Run the hostile turn, then cells 2..``last``; returns cell ``last``'s output area."""
    run_turn(page, lab, name)
    for i in range(2, last + 1):
        run_cell(page, i)
    return cell(page, last).locator(".jp-OutputArea")


def live_cell(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    run_turn(page, lab, "live-cell")
    return cell(page, 1).locator(".jp-OutputArea"), [ALL, PROMPT]


def approval_prompt(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    run_turn(page, lab, "approval", decide=False)
    return cell(page, 1).locator(".nba-approvals"), [ALL, PROMPT]


def timeline_widget(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    out = run_to(page, lab, "timeline-widget", 3)
    root = out.locator(".jp-nbagent-output[data-view='live'] .nba-timeline")
    # The answer (every payload) as Markdown: a tree the kernel parsed, built by the painter.
    root.locator('.nba-answer-md[data-rendered="true"] .nba-md').wait_for()
    return root, [ALL, PROMPT, ITEMS["script"]]


def inbox_widget(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    out = run_to(page, lab, "inbox-widget", 3)
    root = out.locator(".jp-nbagent-output[data-view='live'] .nba-inbox")
    root.locator(".nba-inbox-item").nth(len(ITEMS) - 1).wait_for()
    return root, [text.splitlines()[0] for text in ITEMS.values()]


def agent_transcript(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    return run_to(page, lab, "agent-transcript", 4).locator(".jp-RenderedMarkdown"), [ALL, PROMPT, MODEL_NAME]


def exported_markdown(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    out = run_to(page, lab, "exported-markdown", 5).locator(".jp-RenderedMarkdown")
    return out, [ALL, ITEMS["img-onerror"], TOOL_NAME, MODEL_NAME, PROMPT]


def cli_markdown(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    out = run_to(page, lab, "cli-markdown", 6).locator(".jp-RenderedMarkdown")
    return out, [ALL, ITEMS["img-onerror"], TOOL_NAME, MODEL_NAME, PROMPT]


def static_html(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    events = nbagent.read_events(lab.root / FILE, hostile)
    bundle = timeline_json(events, max_text=None)  # every payload whole
    pending = bundle["pending"]
    parts = [
        timeline_html(bundle),
        live_turn_html(timeline_json(events, turn=1, headline=ITEMS["style"])),
        inbox_html(inbox_model(pending["next_step"], pending["next_turn"], "idle")),
    ]
    page.set_content(f"<!DOCTYPE html><html><body>{''.join(parts)}</body></html>")
    return page.locator("body"), [ALL, TOOL_NAME, ITEMS["style"], PROMPT]


def exported_html(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    html = subprocess.run(
        [sys.executable, "-m", "nbagent", "transcript", FILE, "--format", "html"],
        cwd=lab.root,
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    page.set_content(html)
    return page.locator("body"), [ALL, ITEMS["img-onerror"], TOOL_NAME]


def session_tab(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    open_notebook(page, lab.lab_url(lab.write_notebook("tab", []), "tab"))
    page.evaluate(
        "([file, id]) => window.jupyterapp.commands.execute('nbagent:open-session', {file, id})",
        [FILE, hostile],
    )
    tab = page.locator(".jp-nbagent-tab")
    tab.locator('.nba-turn[data-status="completed"]').wait_for()
    # The answer (every payload) rendered as Markdown, its raw text beside it: both inert.
    tab.locator('.nba-answer-md[data-rendered="true"] .nba-md').wait_for()
    return tab, [ALL, TOOL_NAME, PROMPT]


def sessions_panel(page: Any, lab: Lab, hostile: str) -> tuple[Any, list[str]]:
    open_notebook(page, lab.lab_url(lab.write_notebook("panel", []), "panel"))
    page.evaluate("() => window.jupyterapp.commands.execute('nbagent:show-sessions')")
    panel = page.locator("#nbagent-sessions")
    panel.locator(f'.jp-nbagent-row[data-session="{hostile}"]').wait_for()
    return panel, [ITEMS["img-onerror"], MODEL_NAME]


PATHS: dict[str, Callable[[Any, Lab, str], tuple[Any, list[str]]]] = {
    "live-cell": live_cell,
    "approval-prompt": approval_prompt,
    "timeline-widget": timeline_widget,
    "inbox-widget": inbox_widget,
    "agent-transcript": agent_transcript,
    "exported-markdown": exported_markdown,
    "cli-markdown": cli_markdown,
    "static-html": static_html,
    "exported-html": exported_html,
    "session-tab": session_tab,
    "sessions-panel": sessions_panel,
}


@pytest.mark.parametrize("path", PATHS)
def test_the_hostile_corpus_runs_nothing_and_reads_as_written(
    path: str, lab: Lab, page: Any, hostile: str
) -> None:
    errors = PageErrors().watch(page)
    root, expected = PATHS[path](page, lab, hostile)
    root.first.wait_for(state="attached")  # a payload may have hidden it
    page.wait_for_function("el => el.textContent.trim() !== ''", arg=root.first.element_handle())  # painted
    shown = same_text(" ".join(root.evaluate_all(TEXT_JS)))
    # Every bidirectional control shows as a visible mark (text, titles and other attributes).
    markup = "".join(root.evaluate_all("els => els.map(e => e.outerHTML)"))
    raw_bidi = sorted({f"U+{ord(c):04X}" for c in BIDI.findall(markup + shown)})
    missing = [text for text in expected if same_text(visible_controls(text)) not in shown]
    shot(page, f"hostile-{path}")
    assert page.evaluate(FLAG_JS) is None  # names the payload that ran, if one did
    made = root.locator(INJECTED).evaluate_all("els => els.map(e => e.outerHTML.slice(0, 300))")
    assert made == []
    assert page.locator("a[href^='javascript']").count() == 0
    # A bare URL, `www.` name or address in data is no link (GFM autolinks), except in a model's
    # answer that a view renders as Markdown on purpose (`.nba-md`).
    linked = root.locator("a[href*='evil.invalid']").evaluate_all(
        "els => els.filter(a => !a.closest('.nba-md')).map(a => a.outerHTML)"
    )
    assert linked == []
    assert missing == []
    assert raw_bidi == []
    assert errors.uncaught == [] and errors.console == [], errors
