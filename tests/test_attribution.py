"""Which context mattered (SPEC §11.5): the plan writes nothing, each run is an attribution fork
replayed without one item, scores and noise are difflib figures, the store rebuilds the result, and
max_runs refuses before any fork."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nbagent
from nbagent.forks.attribution import answer_of, score
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.store.reading import list_sessions
from nbagent.views.attribution import attribution_html, attribution_text, plan_text

NOTE = "prices are in EUR"


def _answer(request: Any) -> str:
    seen = any(NOTE in m.plain_text for m in request.messages)
    return "The total is 120 EUR." if seen else "The total is 120 USD (I assumed dollars)."


def _script(early: Any = None) -> ScriptedModel:
    def call(request: Any) -> Response:
        if early is not None:
            early()
        return Response(tool_calls=[ToolCall("invoice_total", id="c1")])

    return ScriptedModel([call, _answer])


def invoice_total() -> str:
    """The invoice total, without its currency."""
    return "120"


async def _story(path: Path) -> tuple[nbagent.Agent, dict[str, str]]:
    """Turn 1: a rates table pending before it, the question, and the currency note arriving while
    step 1's tool runs (seen by step 2)."""
    agent = nbagent.open_session(path, tools=[invoice_total])
    ids = {"rates": agent.inject(nbagent.UserMessage.text("exchange rates table", {"kind": "dataframe"})).id}

    def note() -> None:
        if "note" not in ids:
            ids["note"] = agent.inject(nbagent.UserMessage.text(NOTE, {"kind": "note"})).id

    agent.set_model(_script(note))
    run = await agent.run("What is the invoice total?")
    assert run.text == "The total is 120 EUR."
    return agent, ids


async def test_the_plan_lists_the_claimed_context_but_not_the_opener_and_writes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.nbagent.sqlite"
    agent, ids = await _story(path)
    try:
        count, sessions = len(agent.events), len(list_sessions(path))
        plan = agent.attribution_plan(turn=1)
        assert [i.message_id for i in plan.items] == [ids["rates"], ids["note"]]
        assert [(i.label, i.source, i.step) for i in plan.items] == [
            ("dataframe", "dataframe", 1),
            ("note", "note", 2),
        ]
        assert all(i.tokens > 0 for i in plan.items) and plan.items[1].preview == NOTE
        assert plan.runs == 3
        assert plan.estimate.requests == 2 * 3 and plan.estimate.offline
        estimates = [e.data["total"] for e in agent.events if e.type == "request/estimate"]
        rates, note = plan.items
        assert plan.estimate.input_tokens == 3 * sum(estimates) - rates.tokens * 2 - note.tokens * 1
        assert plan.estimate.cost_text == "nothing (offline model)"
        assert len(agent.events) == count and len(list_sessions(path)) == sessions
        with pytest.raises(ValueError, match="no finished turn 4"):
            agent.attribution_plan(turn=4)
    finally:
        await agent.close()


async def test_each_item_is_scored_by_a_fork_replayed_without_it(tmp_path: Path) -> None:
    path = tmp_path / "s.nbagent.sqlite"
    agent, ids = await _story(path)
    try:
        before = len(agent.events)
        result = await agent.attribute(turn=1, model=_script)
        assert len(agent.events) == before  # the parent is never written
        assert answer_of(agent.events) == "invoice_total {}\nThe total is 120 EUR.", answer_of(agent.events)
        assert [i.message_id for i in result.items] == [ids["note"], ids["rates"]]
        note, rates = result.items
        expected = score(
            "invoice_total {}\nThe total is 120 EUR.",
            "invoice_total {}\nThe total is 120 USD (I assumed dollars).",
        )
        assert note.score == expected > 0 and note.answer_changed
        assert rates.score == 0.0 and not rates.answer_changed and result.noise == 0.0
        assert result.meaningful(note) and not result.meaningful(rates)
        rows = {r.id: r for r in list_sessions(path)}
        assert {note.fork, rates.fork, result.control} <= set(rows)
        for fork, dropped in ((note.fork, [ids["note"]]), (rates.fork, [ids["rates"]]), (result.control, [])):
            events = nbagent.read_events(path, fork)
            forked = next(e for e in events if e.type == "session/forked")
            assert forked.data["purpose"] == "attribution" and forked.data["turn"] == 1
            assert rows[fork].parent == agent.session_id
            replayed = next(e for e in events if e.type == "session/replayed")
            assert replayed.data["drop"] == dropped and replayed.data["parent_turn"] == 1
        assert nbagent.attribution(agent, turn=1) == result
        assert nbagent.attribution(agent.session_id, turn=1, path=path) == result
        text = attribution_text(result)
        assert "1. " in text and "note" in text.splitlines()[1]
        assert "at or below the noise, says nothing: dataframe 'exchange rates table' (0.000)" in text
    finally:
        await agent.close()


async def test_the_echo_model_scores_every_item_and_narrowed_runs_keep_their_order(tmp_path: Path) -> None:
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite")  # the echo model
    ids = {
        "rates": agent.inject(nbagent.UserMessage.text("exchange rates table", {"kind": "dataframe"})).id,
        "note": agent.inject(nbagent.UserMessage.text(NOTE, {"kind": "note"})).id,
    }
    await agent.run("What is the invoice total?")
    try:
        result = await agent.attribute(turn=1)
        assert {i.message_id for i in result.items} == {ids["note"], ids["rates"]}
        assert all(0 < i.score <= 1 and i.answer_changed for i in result.items) and result.noise == 0.0
        assert [i.score for i in result.items] == sorted((i.score for i in result.items), reverse=True)
        one = await agent.attribute(turn=1, items=[ids["rates"]])
        assert [i.message_id for i in one.items] == [ids["rates"]]
        with pytest.raises(ValueError, match="not items of turn 1: nope"):
            await agent.attribute(turn=1, items=["nope"])
    finally:
        await agent.close()


async def test_more_runs_than_max_runs_raise_before_any_fork(tmp_path: Path) -> None:
    path = tmp_path / "s.nbagent.sqlite"
    agent, _ = await _story(path)
    try:
        sessions = len(list_sessions(path))
        with pytest.raises(
            ValueError,
            match=r"needs 3 runs \(2 items left out one at a time \+ a control\), more than max_runs=2",
        ):
            await agent.attribute(turn=1, model="echo", max_runs=2)
        assert len(list_sessions(path)) == sessions
        with pytest.raises(ValueError, match="no attribution runs of turn 1"):
            nbagent.attribution(agent, turn=1)
    finally:
        await agent.close()


def test_scores_read_text_and_tool_calls_and_views_escape_labels() -> None:
    from nbagent.log.events import Event
    from nbagent.views.attribution import Attribution, AttributionItem

    call = {"type": "tool-call", "id": "c", "name": "total", "arguments": {"b": 1, "a": "x"}}
    message = {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "hi"}, call]}
    events = [Event(5, 0, "assistant/message", {"turn": 1, "step": 1, "message": message})]
    assert answer_of(events) == 'hi\ntotal {"a": "x", "b": 1}'
    assert score("abc", "abc") == 0.0 and score("abc", "xyz") == 1.0
    item = AttributionItem("m1", "<b>df</b>", "dataframe", 3, 0.5, True, "f" * 32)
    noisy = AttributionItem("m2", "note", "note", 3, 0.1, True, "e" * 32)
    html = attribution_html(Attribution("s" * 32, 2, (item, noisy), 0.2, "c" * 32))
    assert "<b>df</b>" not in html and "&lt;b&gt;df&lt;/b&gt;" in html
    assert "width:50.0%" in html and "at or below the noise, says nothing: note (0.100)" in html


async def test_a_priced_model_is_estimated_with_its_cost(tmp_path: Path) -> None:
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite")
    agent.inject(nbagent.UserMessage.text("exchange rates table", {"kind": "dataframe"}))
    await agent.run("What is the invoice total?")
    try:
        plan = agent.attribution_plan(turn=1, model="openai:gpt-4.1")
        assert plan.model == "openai:gpt-4.1" and not plan.estimate.offline
        assert plan.estimate.cost is not None and plan.estimate.cost > 0  # genai-prices knows it
        assert plan.estimate.cost_text.startswith("$")
        assert "cost $" in plan_text(plan)
    finally:
        await agent.close()


def test_the_paintings_keep_hostile_labels_inert() -> None:
    from hostile import ITEMS
    from test_views_escape import HOSTILE_TAGS, Tags

    from nbagent.views.attribution import Attribution, AttributionItem

    items = tuple(
        AttributionItem(f"m{n}", text, "note", 1, 0.5 if n % 2 else 0.0, True, "f" * 32, text)
        for n, text in enumerate(ITEMS.values())
    )
    html = attribution_html(Attribution("s" * 32, 1, items, 0.1, "c" * 32))
    assert not [tag for tag, _ in Tags(html).tags if tag in HOSTILE_TAGS]
