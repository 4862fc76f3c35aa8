"""tiktoken's encoding loads in a worker thread started when the session opens, never on the agent
loop's thread (issue #24); the loop awaits it, so estimates stay deterministic (SPEC §12)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
import tiktoken

import nbagent
from nbagent.core import estimate as estimate_module
from nbagent.log.events import RequestEstimate, parse_event
from nbagent.models import ScriptedModel


def tiny_encoding() -> tiktoken.Encoding:
    """A byte-level BPE with three merges: ``hello`` is ``he`` + ``llo`` (2 tokens)."""
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({b"he": 256, b"ll": 257, b"llo": 258})
    return tiktoken.Encoding(name="tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})


class HeldLoad:
    """Stands in for tiktoken's download: records its thread, and returns only when let go."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.go_on = threading.Event()
        self.threads: list[int] = []

    def __call__(self, model: str) -> Any:
        self.threads.append(threading.get_ident())
        self.started.set()
        assert self.go_on.wait(60), "the test never let the encoding load"
        return tiny_encoding()


def openai_model(name: str, *responses: str) -> ScriptedModel:
    model = ScriptedModel(list(responses))
    model.provider, model.model = "openai", name  # type: ignore[attr-defined]
    return model


def estimates(agent: nbagent.Agent) -> list[RequestEstimate]:
    return [r for r in map(parse_event, agent.events) if isinstance(r, RequestEstimate)]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldLoad:
    load = HeldLoad()
    monkeypatch.setattr(estimate_module, "_load_encoding", load)
    yield load
    load.go_on.set()


async def test_the_encoding_loads_off_the_loop_from_open_and_the_first_estimate_waits_for_it(tmp_path, held):
    model = openai_model("held-gpt-test-1", "ok")
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model)
    assert await asyncio.to_thread(held.started.wait, 60)  # started by the open, before any turn
    assert held.threads and held.threads[0] != threading.get_ident()  # not on the loop's thread
    agent.followup("hello world")
    for _ in range(20):  # the loop keeps running while the turn awaits the load
        await asyncio.sleep(0)
    assert estimates(agent) == []  # the first request waits for the counter it will be measured with
    held.go_on.set()
    await agent.when_idle()
    [est] = estimates(agent)
    assert (est.counter, dict(est.by_source), est.total) == ("tiktoken", {"user": 8}, 8)
    assert len(held.threads) == 1  # loaded once
    await agent.close()


async def test_a_load_that_hangs_past_the_wait_counts_with_chars_until_it_finishes(
    tmp_path, held, monkeypatch
):
    monkeypatch.setattr(estimate_module, "LOAD_WAIT_S", 0.01)
    model = openai_model("held-gpt-test-2", "first", "second")
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model)
    agent.followup("hello world")
    await agent.when_idle()
    [first] = estimates(agent)
    assert (first.counter, dict(first.by_source)) == ("chars", {"user": 3})  # and the event says so
    loading = estimate_module.preload("openai", "held-gpt-test-2")  # the load still running
    assert loading is not None
    held.go_on.set()
    await asyncio.wait_for(asyncio.wrap_future(loading), 60)
    agent.followup("hello")
    await agent.when_idle()
    _, second = estimates(agent)
    # Everything counted again with tiktoken: "hello world" 8, the answer "first" 5, "hello" 2.
    assert second.counter == "tiktoken"
    assert dict(second.by_source) == {"user": 8 + 2, "assistant": 5}
    await agent.close()


def test_a_view_waits_for_a_load_at_most_the_wait_then_counts_with_chars(held, monkeypatch):
    """``counter_for`` (what the views and ``%inject``'s receipt use, off the loop) waits for a load
    in progress, but not past ``LOAD_WAIT_S``; once loaded, it counts with tiktoken."""
    monkeypatch.setattr(estimate_module, "LOAD_WAIT_S", 0.01)
    loading = estimate_module.preload("openai", "held-gpt-test-3")
    assert loading is not None and held.started.wait(60)
    assert estimate_module.counter_for("openai", "held-gpt-test-3") is estimate_module.CHARS
    held.go_on.set()
    loading.result(60)
    counter = estimate_module.counter_for("openai", "held-gpt-test-3")
    assert (counter.name, counter.count("hello")) == ("tiktoken", 2)


def test_a_non_openai_model_loads_nothing(held):
    assert estimate_module.preload("ollama", "qwen3") is None
    assert estimate_module.counter_for("ollama", "qwen3") is estimate_module.CHARS
    assert held.threads == []
