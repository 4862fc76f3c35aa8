"""The session tab reads like a log viewer: it opens at the newest turns and follows them, a button
takes it back to the first; a tab opened before the session's first prompt takes its title from it."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import open_notebook
from page_errors import PageErrors

pytestmark = pytest.mark.browser

AT_END_JS = "e => e.scrollHeight - e.scrollTop - e.clientHeight <= 32 && e.scrollTop > 0"


async def _write(path: Path, prompts: list[str], session_id: str | None) -> str:
    import nbagent
    from nbagent.models import ScriptedModel

    model = ScriptedModel([f"answer {i}" for i in range(len(prompts))])
    if session_id is None:
        agent = nbagent.open_session(path, model=model)
    else:
        agent = nbagent.resume_session(path, session_id, model=model)
    for prompt in prompts:
        await agent.run(prompt)
    sid = agent.session_id
    await agent.close()
    return sid


def write(path: Path, prompts: list[str], session_id: str | None = None) -> str:
    """Add turns (one per prompt) to a session of ``path`` (a new one without ``session_id``)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _write(path, prompts, session_id)).result()


def open_tab(page: Any, file: str, sid: str, label: str) -> Any:
    page.evaluate(
        "([file, id, label]) => window.jupyterapp.commands.execute('nbagent:open-session', {file, id, label})",
        [file, sid, label],
    )
    return page.locator(f'.jp-nbagent-tab[data-session="{sid}"]')


def test_the_tab_opens_at_the_newest_turns_follows_them_and_goes_back_to_the_top(lab: Lab, page: Any) -> None:
    path = lab.root / "long.nbagent.sqlite"
    sid = write(path, [f"question {i}" for i in range(1, 31)])
    errors = PageErrors().watch(page)
    page.set_viewport_size({"width": 1280, "height": 600})  # 30 turns overflow the tab
    open_notebook(page, lab.lab_url(lab.write_notebook("follow", []), "follow"))
    tab = open_tab(page, path.name, sid, "question 1")
    tab.locator('.nba-turn[data-id="turn-30"]').wait_for()
    page.wait_for_function(f"e => ({AT_END_JS})(e)", arg=tab.element_handle())
    assert tab.locator('.nba-turn[data-id="turn-30"]').is_visible()
    shot(page, "tab-opens-at-newest")

    write(path, ["question 31"], sid)  # another writer: the tab follows it to the new turn
    tab.locator('.nba-turn[data-id="turn-31"]').wait_for()
    page.wait_for_function(f"e => ({AT_END_JS})(e)", arg=tab.element_handle())

    page.locator(".jp-nbagent-session .jp-Toolbar").get_by_text("Top").click()
    page.wait_for_function("e => e.scrollTop === 0", arg=tab.element_handle())
    write(path, ["question 32"], sid)  # scrolled up, the tab stays where the user is
    tab.locator('.nba-turn[data-id="turn-32"]').wait_for(state="attached")
    assert tab.evaluate("e => e.scrollTop") == 0
    page.locator(".jp-nbagent-session .jp-Toolbar").get_by_text("Newest").click()
    page.wait_for_function(f"e => ({AT_END_JS})(e)", arg=tab.element_handle())
    assert errors.uncaught == [] and errors.console == [], errors


def test_a_tab_opened_before_the_first_prompt_takes_its_title_from_it(lab: Lab, page: Any) -> None:
    path = lab.root / "fresh.nbagent.sqlite"
    sid = write(path, [])
    open_notebook(page, lab.lab_url(lab.write_notebook("title", []), "title"))
    open_tab(page, path.name, sid, "(no prompt yet)").locator(".nba-timeline").wait_for()
    title = page.locator(f'.lm-TabBar-tab[data-id="nbagent-session-{sid}"] .lm-TabBar-tabLabel')
    assert title.inner_text() == "(no prompt yet)"
    write(path, ["What changed overnight?"], sid)
    page.wait_for_function(
        "e => e.textContent === 'What changed overnight?'", arg=title.element_handle(), polling=200
    )


def test_the_panel_row_follows_a_session_written_elsewhere_and_keeps_the_focus(lab: Lab, page: Any) -> None:
    path = lab.root / "grows.nbagent.sqlite"
    sid = write(path, ["first question"])
    open_notebook(page, lab.lab_url(lab.write_notebook("grows", []), "grows"))
    page.evaluate("() => window.jupyterapp.commands.execute('nbagent:show-sessions')")
    row = page.locator(f'.jp-nbagent-row[data-session="{sid}"]')
    row.locator(".jp-nbagent-row-meta", has_text="1 turn").wait_for()
    row.locator(".jp-nbagent-export").focus()
    write(path, ["second question"], sid)  # no file-browser refresh: the panel notices by itself
    row.locator(".jp-nbagent-row-meta", has_text="2 turns").wait_for()
    assert page.evaluate("() => document.activeElement.classList.contains('jp-nbagent-export')")
    assert page.evaluate("() => document.activeElement.closest('.jp-nbagent-row').dataset.session") == sid


async def _pending(path: Path, count: int) -> str:
    import nbagent
    from nbagent.context import cell_text

    agent = nbagent.open_session(path, model="echo")
    for i in range(count):
        agent.inject(cell_text(f"note {i}", label=f"n{i}"))
    sid = agent.session_id
    await agent.close()
    return sid


def test_a_long_pending_queue_paints_its_first_items_and_more_on_demand(lab: Lab, page: Any) -> None:
    path = lab.root / "queue.nbagent.sqlite"
    with ThreadPoolExecutor(1) as pool:
        sid = pool.submit(asyncio.run, _pending(path, 450)).result()
    open_notebook(page, lab.lab_url(lab.write_notebook("queue", []), "queue"))
    tab = open_tab(page, path.name, sid, "queue")
    queue = tab.locator('.nba-pending [data-queue="next-step"]')
    more = queue.locator("button.nba-more-pending")
    more.wait_for()
    assert queue.locator(".nba-inbox-item").count() == 200
    assert more.inner_text() == "250 more in next-step: show 200 more"
    more.click()
    queue.locator(".nba-inbox-item").nth(399).wait_for()
    assert queue.locator(".nba-inbox-item").count() == 400
    more.click()
    queue.locator(".nba-inbox-item").nth(449).wait_for()
    assert more.count() == 0 and queue.locator(".nba-inbox-item").count() == 450
