"""End to end: an agent whose model is a provider string, talking real HTTP to a local test server.

These pin what SPEC §4, §5.5 and §5.6 promise when the model is a real provider: the durable events
of a tool-calling turn, a 429 retried in the same step after the provider's ``retry-after-ms``, and
a cancel mid-stream that closes the HTTP stream at once and ends the turn ``aborted``.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from eventtrace import trace
from provider_servers import (
    Error,
    Stream,
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_end,
    an_message_start,
    an_text_stream,
    oa_text_stream,
    oa_tool_call_stream,
    wait_for_hangup,
)

import nbagent
from nbagent.testing import check_invariants


@nbagent.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


pytestmark = pytest.mark.usefixtures("provider_env")


def of_type(agent, kind: str) -> list[dict]:
    return [e.data for e in agent.events if e.type == kind]


async def test_a_tool_calling_turn_logs_chunks_messages_calls_and_results(server, db):
    server.reply(
        Stream(oa_tool_call_stream([("call_1", "add", '{"a": 1, "b": 2}')], split=4)),
        Stream(oa_text_stream("The sum ", "is 3.")),
    )

    agent = nbagent.open_session(db, model=f"openai-compatible:m@{server.url}/v1", tools=[add])
    agent.followup("add 1 and 2")
    await agent.when_idle()
    await agent.close()
    assert trace(agent.events) == [
        "INS nt 0 ['add 1 and 2']",
        "TS 1",
        "CLM nt 1",
        "SS 1.1",
        "UM add 1 and 2",
        "RH initial",
        "CH",
        "AM 1.1 ['call_1']",
        "TC call_1",
        "TR call_1",
        "SE 1.1",
        "SS 1.2",
        "CH",
        "AM 1.2 'The sum is 3.'",
        "SE 1.2",
        "TE 1 completed",
    ]
    check_invariants(agent.events)
    chunks = [c["chunk"] for c in of_type(agent, "assistant/chunk")]
    assert chunks == [
        {"type": "tool-call", "id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"type": "usage", "input_tokens": 20, "output_tokens": 7},
        {"type": "finish", "kind": "tool-calls"},
        {"type": "text", "text": "The sum "},
        {"type": "text", "text": "is 3."},
        {"type": "usage", "input_tokens": 10, "output_tokens": 3},
        {"type": "finish", "kind": "stop"},
    ]
    first, second = of_type(agent, "assistant/message")
    assert first["usage"] == {"input_tokens": 20, "output_tokens": 7}
    assert first["message"]["source"]["provider"] == "openai-compatible"
    assert list(second["message"]["content"]) == [{"type": "text", "text": "The sum is 3."}]
    assert of_type(agent, "tool/call") == [
        {"turn": 1, "step": 1, "call_id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 2}'}
    ]
    [result] = of_type(agent, "tool/result")
    assert list(result["message"]["content"][0]["content"]) == [{"type": "text", "text": "3"}]
    # The second request is the derived history, tool result paired with its call.
    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": "add 1 and 2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
    ]
    assert server.bodies[0]["tools"][0]["function"]["name"] == "add"


async def test_a_429_with_retry_after_is_retried_in_the_same_step(server, db):
    server.reply(
        Error(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "40", "Retry-After": "1"}),
        Stream(oa_text_stream("ok")),
    )

    agent = nbagent.open_session(db, model=f"openai-compatible:m@{server.url}/v1")
    agent.followup("hi")
    await agent.when_idle()
    await agent.close()
    assert trace(agent.events) == [
        "INS nt 0 ['hi']",
        "TS 1",
        "CLM nt 1",
        "SS 1.1",
        "UM hi",
        "RH initial",
        "CH",
        "RETRY 2",
        "CH",
        "AM 1.1 'ok'",
        "SE 1.1",
        "TE 1 completed",
    ]
    check_invariants(agent.events)
    [retry] = of_type(agent, "llm/retry")
    assert retry == {
        "turn": 1,
        "step": 1,
        "attempt": 2,
        "delay_ms": 40,
        "failure": {
            "message": f"openai-compatible:m@{server.url}/v1: HTTP 429: slow down",
            "code": "RATE_LIMIT",
            "status": 429,
            "retry_after_ms": 40,
        },
    }
    assert len(server.requests) == 2
    # delay_ms 40: retry-after-ms (40 ms) won over Retry-After (1 s); read from the log, not a clock


async def test_cancel_mid_stream_closes_the_http_stream_and_ends_the_turn_aborted(server, db):
    server.reply(Stream(oa_text_stream("Once ", "upon ", "a time"), stall_after=3, stall_seconds=300))

    agent = nbagent.open_session(db, model=f"openai-compatible:m@{server.url}/v1")
    agent.followup("tell a story")
    while not server.stalled.is_set():
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)  # let the client read what the server sent
    cancelled_at = time.monotonic()
    agent.cancel()
    await agent.when_idle()
    idle_at = time.monotonic()
    await agent.close()
    closed_at = wait_for_hangup(server)
    assert closed_at is not None, "the server never saw the connection close"
    assert closed_at - cancelled_at < 120  # prompt: the stalled stream would hold for 300 s
    assert idle_at - cancelled_at < 120
    assert trace(agent.events)[-4:] == ["CH", "AM* 1.1 'Once upon '", "SE 1.1", "TE 1 aborted:user"]
    check_invariants(agent.events)


async def test_an_anthropic_turn_merges_tool_result_and_steering_into_one_user_message(server, db):
    tool_use = [
        an_message_start(),
        an_block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}),
        an_delta(0, {"type": "input_json_delta", "partial_json": '{"a": 2,'}),
        an_delta(0, {"type": "input_json_delta", "partial_json": ' "b": 5}'}),
        an_block_stop(0),
        *an_message_end("tool_use"),
    ]
    server.reply(Stream(tool_use, delay=0.05), Stream(an_text_stream("7, and noted.")))
    import nbagent.models.anthropic as provider

    model = provider.AnthropicModel("claude-test", base_url=server.url)
    agent = nbagent.open_session(db, model=model, tools=[add], system="Be brief.")
    agent.followup("add 2 and 5")
    while not server.requests:
        await asyncio.sleep(0.005)
    agent.steer("also say 'noted'")
    await agent.when_idle()
    await agent.close()
    check_invariants(agent.events)
    assert trace(agent.events)[-6:] == [
        "SS 1.2",
        "UM also say 'noted'",
        "CH",
        "AM 1.2 '7, and noted.'",
        "SE 1.2",
        "TE 1 completed",
    ]
    second = server.bodies[1]
    assert second["system"] == "Be brief."
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "add 2 and 5"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 5}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "7"}]},
                {"type": "text", "text": "also say 'noted'"},
            ],
        },
    ]
