"""Assistant answers read as Markdown in the lab extension (JupyterLab's parser and sanitizer), with
the raw text one click (or key) away; links go out only to http(s)/mailto, nothing loads or runs.
The hostile corpus through the same path is in ``test_hostile_paths.py`` (the session tab)."""

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

ANSWER = """\
The **warmest** city is `Lisbon`:

- Lisbon: 21 °C
- Porto: 18 °C

| city | °C |
|---|---|
| Lisbon | 21 |

```python
print("hi")
```

See [the data](https://example.invalid/data) and ![a chart](https://example.invalid/chart.png),
not [this](javascript:window.__nbagent_xss='md') nor [that](relative/page).
"""
FILE = "markdown.nbagent.sqlite"


async def _write(path: Path) -> str:
    import nbagent
    from nbagent.models import ScriptedModel

    agent = nbagent.open_session(path, model=ScriptedModel([ANSWER]))
    await agent.run("Which city is warmest?")
    sid = agent.session_id
    await agent.close()
    return sid


def write_session(path: Path) -> str:
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _write(path)).result()


def test_a_session_tab_renders_the_answer_as_markdown_with_the_raw_text_a_click_away(
    lab: Lab, page: Any
) -> None:
    sid = write_session(lab.root / FILE)
    errors = PageErrors().watch(page)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    open_notebook(page, lab.lab_url(lab.write_notebook("md-tab", []), "md-tab"))
    page.evaluate(
        "([file, id]) => window.jupyterapp.commands.execute('nbagent:open-session', {file, id})", [FILE, sid]
    )
    answer = page.locator('.jp-nbagent-tab .nba-answer-md[data-rendered="true"]')
    answer.wait_for()
    md = answer.locator(".nba-md")
    assert md.locator("strong").inner_text() == "warmest"
    assert md.locator("li").all_inner_texts() == ["Lisbon: 21 °C", "Porto: 18 °C"]
    assert md.locator("table td").all_inner_texts() == ["Lisbon", "21"]
    assert 'print("hi")' in md.locator("pre code").inner_text()
    links = md.locator("a").evaluate_all(
        "els => els.map(a => [a.textContent, a.getAttribute('href'), a.target, a.rel])"
    )
    assert links == [
        ["the data", "https://example.invalid/data", "_blank", "noopener noreferrer nofollow"],
        ["this", None, "", ""],
        ["that", None, "", ""],
    ]
    assert "and [image: a chart]," in md.inner_text()
    assert md.locator("img, script, iframe, svg, mjx-container, style").count() == 0
    assert not any("example.invalid" in url for url in requests)  # the image never loads
    assert md.is_visible() and not answer.locator(".nba-answer-raw").is_visible()
    shot(page, "markdown-answer-rendered")

    toggle = answer.locator("button.nba-raw-toggle")
    toggle.focus()
    page.keyboard.press("Enter")  # the keyboard reaches the raw text too
    raw = answer.locator("pre.nba-answer-raw")
    raw.wait_for(state="visible")
    assert raw.inner_text().strip() == ANSWER.strip()
    assert not md.is_visible() and toggle.get_attribute("aria-pressed") == "true"
    shot(page, "markdown-answer-raw")
    toggle.click()
    md.wait_for(state="visible")
    assert toggle.inner_text() == "Raw"
    assert page.evaluate("() => window.__nbagent_xss === undefined") is True
    assert errors.uncaught == [] and errors.console == [], errors
