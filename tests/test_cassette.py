"""The recording model (``record:``/``replay:``, nbagent/models/cassette.py): answers recorded from a
real HTTP provider (the local OpenAI-wire test server) replay offline with no key and no server,
keyed by the request's content; an unseen request fails naming what differs; vcrpy's record modes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from provider_servers import Stream, oa_text_stream, oa_tool_call_stream

import nbagent
from nbagent.models.cassette import RecordingModel


@nbagent.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


pytestmark = pytest.mark.usefixtures("provider_env")


def answers(agent: nbagent.Agent) -> list[str]:
    return [
        "".join(b.get("text", "") for b in e.data["message"]["content"] if b.get("type") == "text")
        for e in agent.events
        if e.type == "assistant/message"
    ]


async def one_turn(tmp_path: Path, model: RecordingModel, prompt: str, **kw: object) -> nbagent.Agent:
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=model, **kw)  # type: ignore[arg-type]
    agent.inject(nbagent.UserMessage.text("captured 2026-12-04T11:02:03Z: prices in EUR", {"kind": "cell"}))
    await agent.run(prompt)
    await agent.close()
    return agent


async def test_recorded_answers_replay_offline_with_tool_calls(server, tmp_path, monkeypatch) -> None:
    cassette = tmp_path / "tour.nbagent-cassette.json"
    spec = f"openai-compatible:m@{server.url}/v1"
    server.reply(
        Stream(oa_tool_call_stream([("call_1", "add", '{"a": 1, "b": 2}')])),
        Stream(oa_text_stream("The sum ", "is 3.")),
    )
    recorded = await one_turn(
        tmp_path, RecordingModel(spec, "new_episodes", cassette), "add 1 and 2", tools=[add]
    )
    assert len(server.requests) == 2
    assert answers(recorded) == ["", "The sum is 3."]
    stored = json.loads(cassette.read_text())
    assert [len(i["request"]["messages"]) for i in stored["interactions"]] == [2, 4]
    assert "sk-test-dummy" not in cassette.read_text()  # keys never reach the cassette

    monkeypatch.delenv("OPENAI_API_KEY")  # no key, and the server is gone: the replay needs neither
    server.__exit__(None, None, None)
    again = await one_turn(tmp_path, RecordingModel(spec, "none", cassette), "add 1 and 2", tools=[add])
    assert answers(again) == answers(recorded)
    assert [e.data["name"] for e in again.events if e.type == "tool/call"] == ["add"]
    assert [e.data.get("usage") for e in again.events if e.type == "assistant/message"] == [None, None]


async def test_an_unseen_request_fails_naming_what_differs(server, tmp_path) -> None:
    cassette = tmp_path / "c.json"
    spec = f"openai-compatible:m@{server.url}/v1"
    server.reply(Stream(oa_text_stream("Teal.")))
    await one_turn(tmp_path, RecordingModel(spec, "new_episodes", cassette), "Which colour?")
    replay = nbagent.open_session(None, model=RecordingModel(spec, "none", cassette))
    replay.inject(nbagent.UserMessage.text("captured 2026-12-05T09:00:00Z: prices in EUR", {"kind": "cell"}))
    run = await replay.run("Which shape?")
    error = run.end["reason"]["error"]
    assert error["code"] == "BAD_REQUEST"
    assert error["message"] == (
        f"replay:{spec}: no recorded answer for this request in c.json: message 2 (user) differs: "
        "recorded «Which colour?», now «Which shape?». Record it with "
        f"`%agent model record:{spec}` (or NBAGENT_RECORD_MODE=new_episodes) and a key, then replay again"
    )
    await replay.close()
    assert len(server.requests) == 1  # a replay never reaches the provider


async def test_record_modes_follow_vcrpy(server, tmp_path) -> None:
    cassette = tmp_path / "c.json"
    spec = f"openai-compatible:m@{server.url}/v1"
    server.reply(Stream(oa_text_stream("first")))
    await one_turn(tmp_path, RecordingModel(spec, "once", cassette), "q1")  # no cassette yet: records
    once = await one_turn(tmp_path, RecordingModel(spec, "once", cassette), "q2")  # it exists: replays only
    assert "no recorded answer" in once.events[-1].data["reason"]["error"]["message"]
    server.reply(Stream(oa_text_stream("second")))
    episode = await one_turn(tmp_path, RecordingModel(spec, "new_episodes", cassette), "q2")
    assert answers(episode) == ["second"] and len(server.requests) == 2
    replayed = await one_turn(tmp_path, RecordingModel(spec, "new_episodes", cassette), "q1")
    assert answers(replayed) == ["first"] and len(server.requests) == 2  # seen: replayed
    server.reply(Stream(oa_text_stream("again")))
    asked = await one_turn(tmp_path, RecordingModel(spec, "all", cassette), "q1")  # always asks, overwrites
    assert answers(asked) == ["again"] and len(server.requests) == 3
    assert len(json.loads(cassette.read_text())["interactions"]) == 2
    server.reply(Stream(oa_text_stream("fresh")))
    await one_turn(tmp_path, RecordingModel(spec, "rewrite", cassette), "q3")  # starts the cassette afresh
    (only,) = json.loads(cassette.read_text())["interactions"]
    assert only["request"]["messages"][-1]["content"][0]["text"] == "q3"


def test_model_strings_and_a_missing_cassette_are_clear() -> None:
    model = nbagent.models.resolve_model("replay:openai:gpt-4o-mini")
    assert isinstance(model, RecordingModel)
    assert (model.name, model.mode, model.provider, model.model) == (
        "replay:openai:gpt-4o-mini",
        "none",
        "openai",
        "gpt-4o-mini",
    )
    assert nbagent.models.resolve_model("record:openai:gpt-4o-mini").mode == "new_episodes"
    with pytest.raises(
        nbagent.NbagentError, match="takes a provider model such as replay:openai:gpt-4o-mini"
    ):
        nbagent.models.resolve_model("replay:replay:x")
    with pytest.raises(ValueError, match="is not one of none, once, new_episodes, all, rewrite"):
        RecordingModel("openai:x", "sometimes")
