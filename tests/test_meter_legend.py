"""The bars' legend (issue #35 item 3): once per timeline in the saved HTML, listing the kinds the
steps' bars hold in the meter's order, with the same words and colours the browser's painter uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbagent
from nbagent.context import cell_text
from nbagent.views.bundle import bundle_json
from nbagent.views.html import live_turn_html, timeline_html
from nbagent.views.meter import KIND_ORDER, kind_colour, legend_html, legend_kinds
from nbagent.views.timeline import project

PAINTER = Path(__file__).resolve().parent.parent / "labextension" / "src" / "widgets" / "painter.js"


def _step(*kinds: str) -> dict[str, object]:
    return {"type": "step", "id": f"s-{'-'.join(kinds)}", "parent": None,
            "bar": [{"kind": k, "tokens": 1, "share": 1 / len(kinds), "text": f"{k}: 1"} for k in kinds]}  # fmt: skip


def test_the_legend_lists_each_kind_once_in_the_meters_order() -> None:
    nodes = [
        _step("system", "user", "tools"),
        _step("user", "dataframe", "zeta-kind", "assistant"),
        {"type": "turn"},
    ]
    assert legend_kinds(nodes) == ["user", "dataframe", "assistant", "system", "tools", "zeta-kind"]
    html = legend_html(nodes)
    assert html.count('class="nba-legend-item"') == 6
    assert '<span class="nba-muted">tokens in, by source:</span>' in html
    assert f'style="background:{kind_colour("user")}"></span>followup · steer</span>' in html
    assert legend_html([{"type": "step"}, {"type": "turn"}]) == ""  # no bar yet: no legend


def test_a_kind_from_the_log_is_escaped_in_the_legend() -> None:
    html = legend_html([_step('<img src=x onerror="alert(1)">')])
    assert "<img" not in html and "&lt;img" in html


async def test_the_saved_timeline_and_live_cell_carry_one_legend() -> None:
    agent = nbagent.open_session(None, model="echo")
    agent.inject(cell_text("prices are in EUR", label="note"))
    await agent.run("Which city is warmest?")
    await agent.run("And the coldest?")
    timeline = project(agent.events)
    whole = bundle_json(timeline)
    assert sum(1 for n in whole["nodes"] if n["type"] == "step" and n.get("bar")) == 2
    html = timeline_html(whole)
    assert html.count('class="nba-meter-legend"') == 1  # once, not once per step
    assert html.index('class="nba-meter-legend"') < html.index('class="nba-scroll"')
    assert (
        live_turn_html(bundle_json(timeline, turn=1, headline="turn 1")).count('class="nba-meter-legend"')
        == 1
    )
    await agent.close()


def test_the_painter_orders_kinds_as_the_meter_does() -> None:
    found = re.search(r"export const KIND_ORDER = (\[[^\]]*\]);", PAINTER.read_text(encoding="utf-8"))
    assert found is not None
    assert tuple(json.loads(found.group(1))) == KIND_ORDER
