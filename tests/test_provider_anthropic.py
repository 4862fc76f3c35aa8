"""The Anthropic provider model against a local server speaking the Messages SSE protocol.

The real ``anthropic`` SDK talks real HTTP to ``tests/provider_servers.py``; no key or network needed.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from provider_servers import (
    Error,
    ProviderServer,
    Signal,
    Stream,
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_end,
    an_message_start,
    an_text_stream,
    collect,
    consume_until_stalled,
    wait_for_hangup,
)

from nbagent.log.messages import AssistantMessage, UserMessage, tool_result_message
from nbagent.models import (
    Finish,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
    resolve_model,
)
from nbagent.models.anthropic import AnthropicModel

MODEL_SOURCE = {"kind": "model", "provider": "anthropic", "model": "claude-test"}


pytestmark = pytest.mark.usefixtures("provider_env")


def model_for(server: ProviderServer, **kw) -> AnthropicModel:
    return AnthropicModel("claude-test", base_url=server.url, **kw)


def ask(model, request, signal=None):
    return asyncio.run(collect(model, request, signal))


def hello() -> ModelRequest:
    return ModelRequest(messages=(UserMessage.text("hi"),))


# -- streaming -----------------------------------------------------------------------------


def test_text_stream_becomes_deltas_usage_and_stop(server):
    server.reply(Stream(an_text_stream("Hel", "lo")))
    chunks = ask(model_for(server), hello())
    assert chunks == [TextDelta("Hel"), TextDelta("lo"), Usage(12, 5), Finish("stop")]
    [req] = server.requests
    assert req.path == "/v1/messages"
    assert req.headers["authorization"] == "Bearer sk-ant-test-dummy"  # this SDK generation's scheme
    assert req.headers["x-stainless-retry-count"] == "0"
    assert req.body == {
        "model": "claude-test",
        "max_tokens": 8192,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": True,
    }


def test_thinking_text_and_split_tool_input_become_reasoning_text_and_complete_calls(server):
    events = [
        an_message_start(input_tokens=30),
        an_block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        an_delta(0, {"type": "thinking_delta", "thinking": "The user wants "}),
        an_delta(0, {"type": "thinking_delta", "thinking": "a sum."}),
        an_delta(0, {"type": "signature_delta", "signature": "sig"}),
        an_block_stop(0),
        an_block_start(1, {"type": "text", "text": ""}),
        an_delta(1, {"type": "text_delta", "text": "Adding."}),
        an_block_stop(1),
        an_block_start(2, {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}),
        an_delta(2, {"type": "input_json_delta", "partial_json": ""}),
        an_delta(2, {"type": "input_json_delta", "partial_json": '{"a": 1, '}),
        an_delta(2, {"type": "input_json_delta", "partial_json": '"b": 2}'}),
        an_block_stop(2),
        an_block_start(3, {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}}),
        an_block_stop(3),
        *an_message_end("tool_use", output_tokens=40),
    ]
    server.reply(Stream(events))
    chunks = ask(model_for(server), hello())
    assert chunks == [
        ReasoningDelta("The user wants "),
        ReasoningDelta("a sum."),
        TextDelta("Adding."),
        ToolCallChunk("toolu_1", "add", '{"a": 1, "b": 2}'),
        ToolCallChunk("toolu_2", "now", "{}"),
        Usage(30, 40),
        Finish("tool-calls"),
    ]


def test_max_tokens_stop_reason_is_max_tokens(server):
    server.reply(Stream(an_text_stream("cut", stop_reason="max_tokens")))
    assert ask(model_for(server), hello())[-1] == Finish("max-tokens")


# -- what the provider receives ------------------------------------------------------------


def test_consecutive_user_messages_merge_into_one_with_tool_results_first_and_order_kept(server):
    context = UserMessage.text("<dataframe name='df'>…</dataframe>", {"kind": "dataframe", "name": "df"})
    prompt = UserMessage.text("summarize df")
    call = AssistantMessage(
        id="a1",
        content=[
            {"type": "reasoning", "text": "need stats"},
            {"type": "text", "text": "Checking."},
            {"type": "tool-call", "id": "toolu_1", "name": "describe", "arguments": '{"name": "df"}'},
            {"type": "tool-call", "id": "toolu_2", "name": "head", "arguments": "{}"},
        ],
        source=MODEL_SOURCE,
    )
    result_1 = tool_result_message("toolu_1", [{"type": "text", "text": "3 rows"}])
    result_2 = tool_result_message("toolu_2", [{"type": "text", "text": "no such frame"}], is_error=True)
    extra = UserMessage.text("the tool's context", {"kind": "plugin", "plugin": "t"})
    steer = UserMessage.text("also plot it")
    interrupted = AssistantMessage(
        id="a2", content=[{"type": "text", "text": "Half an ans"}], source=MODEL_SOURCE
    )
    request = ModelRequest(
        messages=(
            context,
            prompt,
            call,
            result_1,
            result_2,
            extra,
            steer,
            interrupted,
            UserMessage.text("go on"),
        ),
        tools=(
            {
                "name": "describe",
                "description": "Describe a variable.",
                "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        ),
        system="You are terse.",
    )
    server.reply(Stream(an_text_stream("ok")))
    ask(model_for(server), request)
    body = server.bodies[0]
    assert body["system"] == "You are terse."
    assert body["tools"] == [
        {
            "name": "describe",
            "description": "Describe a variable.",
            "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}},
        }
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<dataframe name='df'>…</dataframe>"},
                {"type": "text", "text": "summarize df"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "describe", "input": {"name": "df"}},
                {"type": "tool_use", "id": "toolu_2", "name": "head", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "3 rows"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "no such frame"}],
                    "is_error": True,
                },
                {"type": "text", "text": "the tool's context"},
                {"type": "text", "text": "also plot it"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Half an ans"}]},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
    ]


def test_a_context_arriving_before_tool_results_still_sends_results_first(server):
    call = AssistantMessage(
        id="a1",
        content=[{"type": "tool-call", "id": "t1", "name": "f", "arguments": "{}"}],
        source=MODEL_SOURCE,
    )
    late = UserMessage.text("ctx")
    result = tool_result_message("t1", [])
    request = ModelRequest(messages=(UserMessage.text("q"), call, late, result))
    server.reply(Stream(an_text_stream("ok")))
    ask(model_for(server), request)
    assert server.bodies[0]["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1"}, {"type": "text", "text": "ctx"}],
    }


def test_images_become_base64_image_blocks(server):
    message = UserMessage(
        content=[{"type": "text", "text": "look"}, {"type": "image", "mime": "image/png", "data": "QUJD"}]
    )
    server.reply(Stream(an_text_stream("ok")))
    ask(model_for(server), ModelRequest(messages=(message,)))
    assert server.bodies[0]["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"},
    }


def test_thinking_budget_is_sent(server):
    server.reply(Stream(an_text_stream("ok")))
    ask(model_for(server, thinking_budget=2048, max_tokens=4096), hello())
    assert server.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert server.bodies[0]["max_tokens"] == 4096


def test_signed_thinking_goes_back_with_tool_results_and_thinking_turns_off_without_it(server):
    events = [
        an_message_start(),
        an_block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        an_delta(0, {"type": "thinking_delta", "thinking": "Use add."}),
        an_delta(0, {"type": "signature_delta", "signature": "SIG=="}),
        an_block_stop(0),
        an_block_start(1, {"type": "tool_use", "id": "toolu_9", "name": "add", "input": {}}),
        an_delta(1, {"type": "input_json_delta", "partial_json": '{"a": 1}'}),
        an_block_stop(1),
        *an_message_end("tool_use"),
    ]
    server.reply(Stream(events), Stream(an_text_stream("1")), Stream(an_text_stream("1")))
    model = model_for(server, thinking_budget=1024)
    prompt = UserMessage.text("add")
    ask(model, ModelRequest(messages=(prompt,)))
    answer = AssistantMessage(
        id="a1",
        content=[
            {"type": "reasoning", "text": "Use add."},
            {"type": "tool-call", "id": "toolu_9", "name": "add", "arguments": '{"a": 1}'},
        ],
        source=MODEL_SOURCE,
    )
    follow = ModelRequest(
        messages=(prompt, answer, tool_result_message("toolu_9", [{"type": "text", "text": "1"}]))
    )
    ask(model, follow)
    assert server.bodies[1]["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert server.bodies[1]["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Use add.", "signature": "SIG=="},
            {"type": "tool_use", "id": "toolu_9", "name": "add", "input": {"a": 1}},
        ],
    }
    ask(model_for(server, thinking_budget=1024), follow)  # a fresh model (e.g. after resume)
    assert "thinking" not in server.bodies[2]
    assert server.bodies[2]["messages"][1]["content"][0]["type"] == "tool_use"


# -- failures ------------------------------------------------------------------------------


def _anthropic_error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


@pytest.mark.parametrize(
    ("status", "body", "headers", "code", "retry_after_ms"),
    [
        (429, _anthropic_error("rate_limit_error", "slow"), {"retry-after": "3"}, "RATE_LIMIT", 3000),
        (529, _anthropic_error("overloaded_error", "Overloaded"), {}, "SERVER", None),
        (500, _anthropic_error("api_error", "boom"), {"retry-after": "1"}, "SERVER", 1000),
        (401, _anthropic_error("authentication_error", "invalid x-api-key"), {}, "AUTH", None),
        (403, _anthropic_error("permission_error", "no"), {}, "AUTH", None),
        (
            400,
            _anthropic_error("invalid_request_error", "messages: roles must alternate"),
            {},
            "BAD_REQUEST",
            None,
        ),
        (404, _anthropic_error("not_found_error", "model: claude-test"), {}, "BAD_REQUEST", None),
        (
            400,
            _anthropic_error("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
            {},
            "CONTEXT_OVERFLOW",
            None,
        ),
    ],
)
def test_http_errors_map_to_failure_codes_without_sdk_retries(
    server, status, body, headers, code, retry_after_ms
):
    server.reply(Error(status, body, headers))
    [finish] = ask(model_for(server), hello())
    assert finish.kind == "error"
    assert (finish.failure.code, finish.failure.status, finish.failure.retry_after_ms) == (
        code,
        status,
        retry_after_ms,
    )
    assert len(server.requests) == 1, "the SDK must not retry: the loop owns retries"


def test_overloaded_error_event_mid_stream_is_a_server_failure(server):
    events = [
        an_message_start(),
        an_block_start(0, {"type": "text", "text": ""}),
        an_delta(0, {"type": "text_delta", "text": "par"}),
        ("error", _anthropic_error("overloaded_error", "Overloaded")),
    ]
    server.reply(Stream(events))
    chunks = ask(model_for(server), hello())
    assert chunks[0] == TextDelta("par")
    assert chunks[1].kind == "error"
    assert (chunks[1].failure.code, chunks[1].failure.status) == ("SERVER", 529)


def test_missing_key_is_an_auth_failure_naming_the_env_var(server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    [finish] = ask(model_for(server), hello())
    assert finish.kind == "error" and finish.failure.code == "AUTH"
    assert "ANTHROPIC_API_KEY" in finish.failure.message
    assert server.requests == []


def test_stream_cut_before_message_stop_is_a_transport_failure(server):
    server.reply(Stream(an_text_stream("a", "b"), cut_after=4))
    chunks = ask(model_for(server), hello())
    assert chunks[0] == TextDelta("a")
    assert chunks[-1].kind == "error" and chunks[-1].failure.code == "TRANSPORT"


def test_clean_end_without_message_stop_is_a_transport_failure(server):
    server.reply(Stream(an_text_stream("a")[:-1]))
    chunks = ask(model_for(server), hello())
    assert chunks[-1].kind == "error" and chunks[-1].failure.code == "TRANSPORT"


# -- cancellation --------------------------------------------------------------------------


async def test_cancelling_the_consuming_task_closes_the_http_stream_promptly(server):
    server.reply(Stream(an_text_stream("a", "b", "c"), stall_after=5, stall_seconds=300))
    seen: list = []

    task = await consume_until_stalled(server, model_for(server), hello(), Signal(), seen, expect=2)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    closed_at = wait_for_hangup(server)
    assert (
        closed_at is not None and closed_at - cancelled_at < 120
    )  # prompt: the stalled stream would hold for minutes
    assert seen == [TextDelta("a"), TextDelta("b")]


async def test_setting_the_signal_ends_a_stalled_stream_and_closes_it(server):
    server.reply(Stream(an_text_stream("a", "b"), stall_after=4, stall_seconds=300))
    seen: list = []
    signal = Signal()

    task = await consume_until_stalled(server, model_for(server), hello(), signal, seen, expect=1)
    cancelled_at = time.monotonic()
    signal.cancel()
    await asyncio.wait_for(task, 120)  # the stream would hold for 300 s
    assert seen == [TextDelta("a")]
    closed_at = wait_for_hangup(server)
    assert (
        closed_at is not None and closed_at - cancelled_at < 120
    )  # prompt: the stalled stream would hold for minutes


def test_model_string_resolves_with_full_name(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy.local:9000")
    model = resolve_model("anthropic:claude-sonnet-4-5")
    assert (model.name, model.provider, model.model, model.base_url) == (
        "anthropic:claude-sonnet-4-5",
        "anthropic",
        "claude-sonnet-4-5",
        "http://proxy.local:9000",
    )
