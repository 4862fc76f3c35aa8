"""``request/estimate``: every request measured by source kind before it is sent (SPEC §12)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import tiktoken

import nbagent
from nbagent import UserMessage
from nbagent.core import estimate as estimate_module
from nbagent.core.estimate import CHARS, TiktokenCounter, counter_for, use_encoding
from nbagent.core.retry import RetryPolicy
from nbagent.log.events import RequestEstimate, parse_event
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.testing import check_invariants


def chars(text: str) -> int:
    return math.ceil(len(text) / 4)


def estimates(agent: nbagent.Agent) -> list[RequestEstimate]:
    return [r for r in map(parse_event, agent.events) if isinstance(r, RequestEstimate)]


@nbagent.tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def tiny_encoding() -> tiktoken.Encoding:
    """A byte-level BPE with three merges: ``hello`` is ``he`` + ``llo`` (2 tokens)."""
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({b"he": 256, b"ll": 257, b"llo": 258})
    return tiktoken.Encoding(name="tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})


def test_the_chars_rule_is_four_ascii_characters_per_token_and_one_per_other_character():
    assert [CHARS.count(t) for t in ("", "a", "abcd", "abcde", "é" * 9, "abcdé")] == [0, 1, 1, 2, 9, 2]


def test_a_tiktoken_encoding_counts_its_tokens():
    counter = TiktokenCounter(tiny_encoding())
    assert counter.count("hello") == 2
    assert counter.count("hello world") == 2 + 1 + 5  # "world" has no merge: five bytes


async def test_each_step_records_its_request_by_source_summing_to_the_total(tmp_path):
    model = ScriptedModel(
        [Response(text="let me look", tool_calls=[ToolCall("lookup", {"key": "k"}, id="c1")]), "done"]
    )
    agent = nbagent.open_session(
        tmp_path / "s.nbagent.sqlite", model=model, tools=[lookup], system="be brief"
    )
    frame = "<dataframe name='df'>a,b\n1,2</dataframe>"
    agent.inject(UserMessage.text(frame, source={"kind": "dataframe", "name": "df"}))
    agent.followup("hello world")
    await agent.when_idle()
    first, second = estimates(agent)
    tools_json = json.dumps([dict(t) for t in agent.tool_schemas], separators=(",", ":"))
    base = {"system": chars("be brief"), "tools": chars(tools_json)}
    assert dict(first.by_source) == {"dataframe": chars(frame), "user": chars("hello world"), **base}
    assistant = chars("let me look") + chars("lookup") + chars('{"key": "k"}')
    assert dict(second.by_source) == {**first.by_source, "assistant": assistant, "tool": chars("value of k")}
    for est in (first, second):
        assert est.total == sum(est.by_source.values())
        assert est.counter == "chars" and est.window is None and est.warning is None
    assert [(e.turn, e.step) for e in (first, second)] == [(1, 1), (1, 2)]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_a_retry_adds_no_estimate(tmp_path):
    model = ScriptedModel([Response(failure="RATE_LIMIT"), "ok"])
    agent = nbagent.open_session(
        tmp_path / "s.nbagent.sqlite", model=model, retry=RetryPolicy(base_delay_ms=1)
    )
    agent.followup("hi")
    await agent.when_idle()
    types = [e.type for e in agent.events]
    assert types.count("llm/retry") == 1 and types.count("request/estimate") == 1
    await agent.close()


async def test_an_openai_model_is_counted_with_tiktoken(tmp_path):
    model = ScriptedModel(["ok"])
    model.provider, model.model = "openai", "tiny-gpt-test"  # type: ignore[attr-defined]
    use_encoding("tiny-gpt-test", tiny_encoding())
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model)
    agent.followup("hello world")
    await agent.when_idle()
    [est] = estimates(agent)
    assert (est.counter, dict(est.by_source), est.total) == ("tiktoken", {"user": 8}, 8)
    await agent.close()


def test_an_encoding_that_cannot_load_falls_back_to_chars_once(monkeypatch):
    calls = []

    def offline(model: str) -> Any:
        calls.append(model)
        raise ConnectionError("no network")

    monkeypatch.setattr(tiktoken, "encoding_for_model", offline)
    assert counter_for("openai", "offline-gpt-test") is CHARS
    assert counter_for("openai", "offline-gpt-test") is CHARS
    assert calls == ["offline-gpt-test"]  # the failure is remembered: no second download attempt
    assert counter_for("ollama", "qwen3") is CHARS  # not an OpenAI model: never tiktoken


def big(label: str, size: int) -> UserMessage:
    return UserMessage.text("x" * size, source={"kind": "cell", "label": label})


@pytest.mark.parametrize("limit", ["warn", "block"])
async def test_above_90_percent_of_the_window_warns_or_blocks(tmp_path, limit):
    model = ScriptedModel(["ok"])
    model.context_window = 90  # type: ignore[attr-defined]
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model)
    agent.context_limit = limit
    for label, size in (("a", 40), ("b", 200), ("c", 80), ("d", 4)):
        agent.inject(big(label, size))
    agent.followup("go")
    await agent.when_idle()
    [est] = estimates(agent)
    assert est.total == 10 + 50 + 20 + 1 + 1 and est.window == 90  # 82 > 81 (90 % of 90)
    assert est.warning == {
        "threshold": 0.9,
        "estimate": est.total,
        "window": 90,
        "largest": [
            {"source": "cell", "label": "b", "tokens": 50},
            {"source": "cell", "label": "c", "tokens": 20},
            {"source": "cell", "label": "a", "tokens": 10},
        ],
    }
    types = [e.type for e in agent.events]
    end = [parse_event(e) for e in agent.events if e.type == "turn/end"][-1]
    if limit == "block":
        assert end.kind == "blocked"
        assert "step/start" not in types and "user/message" not in types  # claimed, never entered
        assert model.requests == [] and not agent.inbox.next_step and not agent.inbox.next_turn
    else:
        assert end.kind == "completed" and types.count("user/message") == 5
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


async def test_just_under_the_threshold_has_no_warning(tmp_path):
    model = ScriptedModel(["ok"])
    model.context_window = 100  # type: ignore[attr-defined]
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model)
    agent.context_limit = "block"
    agent.followup("x" * 360)  # 90 tokens: exactly 90 %, not above it
    await agent.when_idle()
    [est] = estimates(agent)
    assert est.total == 90 and est.warning is None
    assert [parse_event(e) for e in agent.events if e.type == "turn/end"][-1].kind == "completed"
    await agent.close()


async def test_context_limit_refuses_other_values():
    agent = nbagent.open_session(None, model=ScriptedModel([]))
    with pytest.raises(ValueError, match="context_limit must be 'warn' or 'block'"):
        agent.context_limit = "stop"
    await agent.close()


def test_the_window_comes_from_the_price_table_and_is_unknown_for_unknown_models():
    class Named:
        def __init__(self, model: str) -> None:
            self.model = model

    from nbagent.usage import table_window

    assert estimate_module.context_window(Named("gpt-4o"), "openai", table_window) == 128_000
    assert estimate_module.context_window(Named("no-such-model-xyz"), "openai", table_window) is None
    # the core has no table of its own: without the lookup the layer above gives, a window is unknown
    assert estimate_module.context_window(Named("gpt-4o"), "openai") is None
