"""The meter's views all read one view model (SPEC §12): step tokens, the pending inbox's tokens,
``%agent context``'s breakdown, status totals and cost, and the Markdown transcript's totals."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

import nbagent
from nbagent import UserMessage
from nbagent.context import dataframe, estimate_tokens
from nbagent.core.estimate import CHARS, content_tokens, use_encoding
from nbagent.log.events import RequestEstimate, parse_event
from nbagent.models import Response, ScriptedModel
from nbagent.models.base import Usage
from nbagent.views import timeline_json, transcript
from nbagent.views.meter import context_breakdown
from nbagent.views.timeline import project


def estimates(events) -> list[RequestEstimate]:
    return [r for r in map(parse_event, events) if isinstance(r, RequestEstimate)]


def priced_model(responses) -> ScriptedModel:
    """A scripted model that says it is OpenAI's gpt-4o (so the price table knows it), counted with
    the characters rule (no tiktoken files offline)."""
    model = ScriptedModel(responses)
    model.provider, model.model = "openai", "gpt-4o"  # type: ignore[attr-defined]
    use_encoding("gpt-4o", None)
    return model


async def test_pending_tokens_context_breakdown_and_the_step_estimate_agree(tmp_path):
    model = ScriptedModel(["ok"])
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model, system="be brief")
    context = UserMessage.text(
        "<cell>" + "prices in EUR " * 20 + "</cell>", source={"kind": "cell", "label": "units"}
    )
    agent.inject(context)
    bundle = timeline_json(agent.events)
    [item] = bundle["pending"]["next_step"]
    assert item["tokens"] == content_tokens(context.content, CHARS) == 74
    assert item["tokens_text"] == "≈74 tokens"

    breakdown = context_breakdown(agent)  # the history (none yet), the pending inbox, the system
    assert breakdown.by_source == {"cell": 74, "system": 2}
    assert breakdown.total == 76 and breakdown.counter == "chars" and breakdown.window is None
    assert [i.where for i in breakdown.items] == ["next-step"]
    assert breakdown.lines()[0] == (
        "next request ≈76 tokens (estimated: a token per 4 ASCII characters or per other character; "
        "the model's tokenizer may differ)"
    )
    assert "74  cell · units (next-step)" in "\n".join(breakdown.lines())
    agent.followup("Which unit?")
    await agent.when_idle()
    [est] = estimates(agent.events)
    assert dict(est.by_source) == {**breakdown.by_source, "user": 3}  # what it said, plus the prompt
    step = project(agent.events).nodes["step-1-1"]
    assert step["tokens"] == {
        "total": 79,
        "by_source": dict(est.by_source),
        "counter": "chars",
        "window": None,
    }
    assert [(b["kind"], b["tokens"]) for b in step["bar"]] == [("user", 3), ("cell", 74), ("system", 2)]
    await agent.close()


async def test_status_bundle_and_transcript_show_the_same_totals_and_cost(tmp_path):
    usage = [Usage(1000, 20, cached_input_tokens=512), Usage(1100, 5)]
    model = priced_model([Response("one", usage=usage[0]), Response("two", usage=usage[1])])
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model)
    agent.followup("first")
    agent.followup("second")
    await agent.when_idle()
    expected = sum(
        calc_price(PriceUsage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                              cache_read_tokens=u.cached_input_tokens), "gpt-4o", provider_id="openai").total_price
        for u in usage
    )  # fmt: skip
    totals = timeline_json(agent.events)["usage"]
    assert (totals["requests"], totals["input_tokens"], totals["output_tokens"]) == (2, 2100, 25)
    assert totals["cached_input_tokens"] == 512
    assert Decimal(totals["cost"]) == expected and totals["cost_text"] == f"${expected:.4f}"
    sent = sum(e.total for e in estimates(agent.events))
    assert totals["text"].startswith(f"2 requests · ≈{sent} tokens sent · 2,100 in (512 cached) · 25 out")
    assert f"## Totals\n\n{totals['text']}" in transcript(agent.events, escape=False)
    await agent.close()


async def test_cost_is_unknown_for_a_model_the_table_does_not_know(tmp_path):
    model = ScriptedModel([Response("x", usage=Usage(10, 2))])
    model.provider, model.model = "openai", "not-a-real-model-zz"  # type: ignore[attr-defined]
    use_encoding("not-a-real-model-zz", None)
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model)
    agent.followup("hi")
    await agent.when_idle()
    totals = timeline_json(agent.events)["usage"]
    assert totals["cost"] is None
    assert totals["cost_text"] == "unknown (openai:not-a-real-model-zz not in the price table)"
    await agent.close()


async def test_a_warning_shows_in_the_live_cell_with_the_largest_messages_named(tmp_path):
    model = ScriptedModel(["ok"])
    model.context_window = 50  # type: ignore[attr-defined]
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model)
    agent.inject(UserMessage.text("y" * 200, source={"kind": "cell", "label": "<b>big</b> *cell*"}))
    agent.followup("go")
    await agent.when_idle()
    live = timeline_json(agent.events, turn=1)
    [warning] = [n for n in live["nodes"] if n["type"] == "warning"]
    assert warning["parent"] == "step-1-1"
    assert warning["text"] == (
        "context nearly full: this request is ≈51 tokens, 102% of the 50-token window; "
        "largest: cell <b>big</b> *cell* (50 tokens), user (1 token)"
    )
    markdown = transcript(agent.events)
    assert "&lt;b&gt;big&lt;/b&gt; \\*cell\\*" in markdown and "<b>big</b>" not in markdown  # data, escaped
    await agent.close()


async def test_a_2m_row_frame_summary_receipt_matches_the_meter(tmp_path):
    rng = np.random.default_rng(0)
    n = 2_000_000
    df = pd.DataFrame({"city": rng.choice(["Pune", "Oslo", "Lima"], n), "temp": rng.normal(20, 5, n)})
    message = dataframe(df, name="df")
    receipt = estimate_tokens(message.plain_text)  # what `%inject df` prints for the chars counter
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=ScriptedModel(["ok"]))
    agent.inject(message)
    [item] = timeline_json(agent.events)["pending"]["next_step"]
    agent.followup("hi")
    await agent.when_idle()
    [est] = estimates(agent.events)
    assert receipt == item["tokens"] == est.by_source["dataframe"] == content_tokens(message.content, CHARS)
    await agent.close()


async def test_the_static_html_paints_a_stacked_bar_per_step_with_its_numbers(tmp_path):
    from nbagent.views.html import timeline_html

    agent = nbagent.open_session(
        tmp_path / "s.nbagent.sqlite", model=ScriptedModel(["ok"]), system="be brief"
    )
    agent.inject(UserMessage.text("z" * 40, source={"kind": "dataframe", "name": "df"}))
    agent.followup("hi")
    await agent.when_idle()
    html = timeline_html(timeline_json(agent.events))
    assert html.count('class="nba-meter"') == 1
    assert 'title="user: 1 token · dataframe: 10 tokens · system: 2 tokens"' in html
    assert 'data-part="dataframe" title="dataframe: 10 tokens" style="flex-grow:0.7692;' in html
    assert "background:var(--nba-dataframe, var(--nba-neutral))" in html  # the badge's colour
    assert "≈13 tokens in" in html
    await agent.close()


async def test_the_static_inbox_shows_each_pending_items_tokens(tmp_path):
    from nbagent.views.html import inbox_html
    from nbagent.views.inbox import inbox_model

    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=ScriptedModel([]))
    agent.inject(UserMessage.text("w" * 41, source={"kind": "cell", "label": "notes"}))
    pending = timeline_json(agent.events)["pending"]
    html = inbox_html(inbox_model(pending["next_step"], pending["next_turn"], "idle"))
    assert '<span class="nba-size">≈11 tokens</span>' in html
    await agent.close()
