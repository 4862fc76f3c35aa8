"""nbconvert's HTML of a notebook with nbagent outputs, read offline: every request that leaves
127.0.0.1 is refused (nbconvert's page asks a CDN for require.js and MathJax), and the timeline
still shows, styled and readable, from nbagent's own inlined assets."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import Lab, shot

pytestmark = [pytest.mark.browser, pytest.mark.kernel]

CELLS = [
    "%load_ext nbagent",
    "%%inject --label notes\nrain expected after noon",
    "%followup --wait Which city is warmest?",
    "%agent show",
]
LOCAL = ("http://127.0.0.1", "about:", "data:", "blob:")


def test_the_exported_timeline_reads_offline(lab: Lab, page: Any) -> None:
    name = lab.write_notebook("offline", CELLS)
    subprocess.run(
        [
            sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace",
            "--ExecutePreprocessor.store_widget_state=False", str(lab.root / name),
        ],
        cwd=lab.root, capture_output=True, check=True,
    )  # fmt: skip
    nb = json.loads((lab.root / name).read_text())
    assert any(
        "application/vnd.nbagent.timeline+json" in o.get("data", {})
        for c in nb["cells"]
        for o in c["outputs"]
    )
    html = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--stdout", str(lab.root / name)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    refused: list[str] = []

    def offline(route: Any) -> None:
        if route.request.url.startswith(LOCAL):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    page.set_content(html, wait_until="load")
    timeline = page.locator(".nbagent.nba-timeline").last
    turn = timeline.locator(".nba-turn").first
    turn.wait_for()
    shot(page, "nbconvert-offline", timeline)
    assert "Which city is warmest?" in turn.inner_text()
    assert timeline.locator(".nba-msg .nba-badge").all_inner_texts()[:2] == ["cell", "followup"]
    # nbagent's stylesheet applied (it travels inside the output, not from a CDN): pills and badges
    # are rounded and tinted, the head is laid out as a row.
    looks = timeline.evaluate(
        """t => { const badge = getComputedStyle(t.querySelector('.nba-badge'));
                  return [badge.borderRadius, badge.backgroundColor !== 'rgba(0, 0, 0, 0)',
                          getComputedStyle(t.querySelector('.nba-head')).display]; }"""
    )
    assert looks == ["9px", True, "flex"]
    assert refused and all(url.startswith("https://") for url in refused), refused  # nbconvert's CDN asks
