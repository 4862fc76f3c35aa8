"""The README's picture: the inbox and the timeline widgets in JupyterLab after a DataFrame was
injected and a followup answered in Markdown. The test checks what the picture must show (the
dataframe before the prompt, the answer rendered as Markdown in the widget) and saves it as
``test-artifacts/readme-screenshot.png``; ``docs/screenshot.png`` is a copy of it."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Lab, shot
from notebook_page import kinds, open_notebook, run_cell, setup_cell
from page_errors import PageErrors

pytestmark = pytest.mark.browser

ANSWER = (
    "**Pune** is the warmest city in `df`:\\n\\n"
    "| city | temp_c |\\n|---|---|\\n| Pune | 31.0 |\\n| Lima | 18.2 |\\n| Oslo | 3.5 |\\n\\n"
    "- the frame has no missing values\\n- all three rows were sent whole"
)


def test_the_readme_picture_shows_a_dataframe_then_a_markdown_answer(lab: Lab, page: Any) -> None:
    errors = PageErrors().watch(page)
    name = lab.write_notebook(
        "readme",
        [
            setup_cell("readme", f'[Response("{ANSWER}")]'),
            'df = pd.DataFrame({"city": ["Oslo", "Lima", "Pune"], "temp_c": [3.5, 18.2, 31.0]})\n'
            'agent.inject(dataframe(df, name="df"));',
            'agent.followup("Which city is warmest?");',
        ],
    )
    open_notebook(page, lab.lab_url(name, "readme"))
    for index in range(3):
        run_cell(page, index)
    turn = page.locator('.nba-timeline .nba-turn[data-id="turn-1"][data-status="completed"]').first
    turn.wait_for()
    assert kinds(turn.locator(".nba-msg"), 2) == ["dataframe", "user"]
    md = turn.locator(".nba-answer-md .nba-md")
    md.locator("table").wait_for()
    assert md.locator("strong").inner_text() == "Pune"
    assert md.locator("td").all_inner_texts()[:2] == ["Pune", "31.0"]
    assert md.locator("li").count() == 2
    page.locator('.nba-inbox[data-pending="0"]').first.wait_for()
    outputs = page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-OutputArea")
    outputs.scroll_into_view_if_needed()
    shot(page, "readme-screenshot", outputs)
    assert errors.uncaught == [] and errors.console == [], errors
