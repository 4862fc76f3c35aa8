"""Provider usage, cached input tokens included, from both wires to ``assistant/message.usage``
(SPEC §12), on the local provider servers; the usage survives a resume."""

from __future__ import annotations

import pytest
from provider_servers import (
    Stream,
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_end,
    oa_chunk,
)

import nbagent
from nbagent.log.events import AssistantMessageEvent, parse_event

pytestmark = pytest.mark.usefixtures("provider_env")


def openai_stream_with_cache() -> list:
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 9,
        "total_tokens": 1209,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    final = oa_chunk(None)
    final[1]["usage"] = usage
    return [oa_chunk({"role": "assistant", "content": "ok"}), oa_chunk({}, "stop"), final, (None, "[DONE]")]


def anthropic_stream_with_cache() -> list:
    start = (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 50,
                    "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 2000,
                    "output_tokens": 1,
                },
            },
        },
    )
    text = [
        an_block_start(0, {"type": "text", "text": ""}),
        an_delta(0, {"type": "text_delta", "text": "ok"}),
    ]
    return [start, *text, an_block_stop(0), *an_message_end("end_turn", output_tokens=7)]


def answers(agent: nbagent.Agent) -> list[AssistantMessageEvent]:
    return [r for r in map(parse_event, agent.events) if isinstance(r, AssistantMessageEvent)]


@pytest.mark.parametrize(
    ("provider", "stream", "usage"),
    [
        (
            "openai",
            openai_stream_with_cache,
            {"input_tokens": 1200, "output_tokens": 9, "cached_input_tokens": 1024},
        ),
        (
            "anthropic",
            anthropic_stream_with_cache,
            {"input_tokens": 2150, "output_tokens": 7, "cached_input_tokens": 2000},
        ),
    ],
)
async def test_provider_usage_with_cached_tokens_is_stored_and_survives_resume(
    server, tmp_path, provider, stream, usage
):
    server.reply(Stream(stream()))
    path = tmp_path / "s.nbagent.sqlite"
    spec = f"openai-compatible:gpt-4o@{server.url}/v1" if provider == "openai" else None
    if provider == "anthropic":
        from nbagent.models.anthropic import AnthropicModel

        model: object = AnthropicModel("claude-test", base_url=server.url)
    else:
        model = spec
    agent = nbagent.open_session(path, model=model)  # type: ignore[arg-type]
    agent.followup("hi")
    await agent.when_idle()
    [answer] = answers(agent)
    assert dict(answer.usage or {}) == usage
    await agent.close()

    resumed = nbagent.resume_session(path, model="echo")
    [again] = answers(resumed)
    assert dict(again.usage or {}) == usage
    await resumed.close()
