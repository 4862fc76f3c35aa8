"""OpenAI-compatible provider models against a local server speaking the chat-completions SSE protocol.

The real ``openai`` SDK talks real HTTP to ``tests/provider_servers.py``; no key or network needed.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
from provider_servers import (
    Error,
    ProviderServer,
    Signal,
    Stall,
    Stream,
    collect,
    consume_until_stalled,
    oa_chunk,
    oa_text_stream,
    oa_tool_call_stream,
    wait_for_hangup,
)

from nbagent.errors import NbagentError
from nbagent.log.messages import AssistantMessage, UserMessage, tool_result_message
from nbagent.models import (
    Failure,
    Finish,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
    resolve_model,
)
from nbagent.models.openai_compat import OpenAICompatModel

MODEL_SOURCE = {"kind": "model", "provider": "openai", "model": "m"}


pytestmark = pytest.mark.usefixtures("provider_env")


def model_for(server: ProviderServer, provider: str = "openai", **kw) -> OpenAICompatModel:
    return OpenAICompatModel("m", provider=provider, base_url=server.url + "/v1", **kw)


def ask(model, request, signal=None):
    return asyncio.run(collect(model, request, signal))


def hello() -> ModelRequest:
    return ModelRequest(messages=(UserMessage.text("hi"),))


# -- streaming -----------------------------------------------------------------------------


def test_text_stream_becomes_deltas_usage_and_stop(server):
    server.reply(Stream(oa_text_stream("Hel", "lo", prompt=11, completion=2)))
    chunks = ask(model_for(server), hello())
    assert chunks == [TextDelta("Hel"), TextDelta("lo"), Usage(11, 2), Finish("stop")]
    [req] = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test-dummy"
    assert req.headers["x-stainless-retry-count"] == "0"
    assert req.body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_split_tool_call_deltas_become_one_complete_call_each_in_order(server):
    calls = [("call_a", "add", '{"a": 1, "b": 22}'), ("call_b", "lookup", '{"q": "x y z"}')]
    server.reply(Stream(oa_tool_call_stream(calls, split=3)))
    chunks = ask(model_for(server), hello())
    assert chunks == [
        ToolCallChunk("call_a", "add", '{"a": 1, "b": 22}'),
        ToolCallChunk("call_b", "lookup", '{"q": "x y z"}'),
        Usage(20, 7),
        Finish("tool-calls"),
    ]


def test_reasoning_content_streams_as_reasoning_deltas(server):
    events = [
        oa_chunk({"role": "assistant", "reasoning_content": "Let me "}),
        oa_chunk({"reasoning_content": "think."}),
        oa_chunk({"content": "42"}),
        oa_chunk({}, "length"),
        oa_chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 9}),
        (None, "[DONE]"),
    ]
    server.reply(Stream(events))
    chunks = ask(model_for(server, provider="deepseek", api_key="k"), hello())
    assert chunks == [
        ReasoningDelta("Let me "),
        ReasoningDelta("think."),
        TextDelta("42"),
        Usage(5, 9),
        Finish("max-tokens"),
    ]


def test_ollama_style_reasoning_field_is_reasoning_too(server):
    events = [
        oa_chunk({"reasoning": "hmm"}),
        oa_chunk({"content": "ok"}),
        oa_chunk({}, "stop"),
        (None, "[DONE]"),
    ]
    server.reply(Stream(events))
    chunks = ask(model_for(server, provider="ollama"), hello())
    assert chunks == [ReasoningDelta("hmm"), TextDelta("ok"), Finish("stop")]


# -- what the provider receives ------------------------------------------------------------


def test_consecutive_user_messages_and_tool_results_reach_the_wire_separately_in_order(server):
    context = UserMessage.text("<dataframe name='df'>…</dataframe>", {"kind": "dataframe", "name": "df"})
    prompt = UserMessage.text("summarize df")
    call = AssistantMessage(
        id="a1",
        content=[
            {"type": "reasoning", "text": "need stats"},
            {"type": "text", "text": "Checking."},
            {"type": "tool-call", "id": "call_1", "name": "describe", "arguments": '{"name": "df"}'},
            {"type": "tool-call", "id": "call_2", "name": "head", "arguments": "{}"},
        ],
        source=MODEL_SOURCE,
    )
    result_1 = tool_result_message("call_1", [{"type": "text", "text": "3 rows"}])
    result_2 = tool_result_message("call_2", [], is_error=True)
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
                "parameters": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
        ),
        system="You are terse.",
    )
    server.reply(Stream(oa_text_stream("ok")))
    ask(model_for(server), request)
    body = server.bodies[0]
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "<dataframe name='df'>…</dataframe>"},
        {"role": "user", "content": "summarize df"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "describe", "arguments": '{"name": "df"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "head", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "3 rows"},
        {"role": "tool", "tool_call_id": "call_2", "content": "(no output)"},
        {"role": "user", "content": "the tool's context"},
        {"role": "user", "content": "also plot it"},
        {"role": "assistant", "content": "Half an ans"},
        {"role": "user", "content": "go on"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "describe",
                "description": "Describe a variable.",
                "parameters": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
        }
    ]


def test_deepseek_sends_reasoning_back_only_with_tool_calls_and_flattens_text(server):
    think_call = AssistantMessage(
        id="a1",
        content=[
            {"type": "reasoning", "text": "plan"},
            {"type": "tool-call", "id": "c1", "name": "f", "arguments": "{}"},
        ],
        source=MODEL_SOURCE,
    )
    answer = AssistantMessage(
        id="a2",
        content=[{"type": "reasoning", "text": "r"}, {"type": "text", "text": "done"}],
        source=MODEL_SOURCE,
    )
    two_blocks = UserMessage(content=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    request = ModelRequest(messages=(two_blocks, think_call, tool_result_message("c1", []), answer))
    server.reply(Stream(oa_text_stream("ok")))
    ask(model_for(server, provider="deepseek", api_key="k"), request)
    assert server.bodies[0]["messages"] == [
        {"role": "user", "content": "a\nb"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            "reasoning_content": "plan",
        },
        {"role": "tool", "tool_call_id": "c1", "content": "(no output)"},
        {"role": "assistant", "content": "done"},
    ]


def test_images_and_multi_block_text_become_content_parts(server, tmp_path):
    png = tmp_path / "p.png"
    png.write_bytes(b"\x89PNG")
    message = UserMessage(
        content=[
            {"type": "text", "text": "look"},
            {"type": "image", "mime": "image/png", "data": "QUJD"},
            {"type": "image", "path": str(png)},
        ]
    )
    server.reply(Stream(oa_text_stream("ok")))
    ask(model_for(server), ModelRequest(messages=(message,)))
    assert server.bodies[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            ],
        }
    ]


# -- failures ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "headers", "code", "retry_after_ms"),
    [
        (
            429,
            {"error": {"message": "slow down", "type": "requests"}},
            {"Retry-After": "2"},
            "RATE_LIMIT",
            2000,
        ),
        (
            429,
            {"error": {"message": "slow down"}},
            {"retry-after-ms": "1500", "Retry-After": "9"},
            "RATE_LIMIT",
            1500,
        ),
        (500, {"error": {"message": "boom", "type": "server_error"}}, {}, "SERVER", None),
        (503, {"error": {"message": "unavailable"}}, {"Retry-After": "1"}, "SERVER", 1000),
        (401, {"error": {"message": "bad key", "type": "invalid_request_error"}}, {}, "AUTH", None),
        (403, {"error": {"message": "forbidden"}}, {}, "AUTH", None),
        (400, {"error": {"message": "bad", "type": "invalid_request_error"}}, {}, "BAD_REQUEST", None),
        (404, {"error": {"message": "no such model"}}, {}, "BAD_REQUEST", None),
        (422, {"detail": "unprocessable"}, {}, "BAD_REQUEST", None),
        (
            400,
            {
                "error": {
                    "message": "maximum context length is 8192 tokens",
                    "code": "context_length_exceeded",
                }
            },
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
    assert isinstance(finish, Finish) and finish.kind == "error"
    assert (finish.failure.code, finish.failure.status, finish.failure.retry_after_ms) == (
        code,
        status,
        retry_after_ms,
    )
    assert len(server.requests) == 1, "the SDK must not retry: the loop owns retries"


def test_error_object_inside_the_stream_is_a_failure(server):
    events = [
        oa_chunk({"content": "par"}),
        (None, {"error": {"message": "overloaded", "type": "server_error"}}),
    ]
    server.reply(Stream(events))
    chunks = ask(model_for(server), hello())
    assert chunks[0] == TextDelta("par")
    assert chunks[1].kind == "error" and chunks[1].failure.code == "SERVER"


def test_missing_key_is_an_auth_failure_naming_the_env_var_and_sends_nothing(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    [finish] = ask(model_for(server), hello())
    assert finish.kind == "error" and finish.failure.code == "AUTH"
    assert "OPENAI_API_KEY" in finish.failure.message
    assert server.requests == []


def test_key_exported_after_the_model_was_created_is_used(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    model = model_for(server)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-later")
    server.reply(Stream(oa_text_stream("ok")))
    ask(model, hello())
    assert server.requests[0].headers["authorization"] == "Bearer sk-later"


def test_stream_cut_mid_body_is_a_transport_failure(server):
    server.reply(Stream(oa_text_stream("a", "b", "c"), cut_after=2))
    chunks = ask(model_for(server), hello())
    assert chunks[:1] == [TextDelta("a")]
    assert chunks[-1].kind == "error" and chunks[-1].failure.code == "TRANSPORT"


def test_stream_ending_without_a_finish_reason_is_a_transport_failure(server):
    server.reply(Stream([oa_chunk({"content": "a"}), (None, "[DONE]")]))
    chunks = ask(model_for(server), hello())
    assert chunks == [
        TextDelta("a"),
        Finish("error", Failure("the stream ended before the model finished its answer", code="TRANSPORT")),
    ]


def test_connection_refused_is_a_transport_failure():
    with ProviderServer() as srv:
        url = srv.url
    [finish] = ask(OpenAICompatModel("m", base_url=url + "/v1"), hello())
    assert finish.kind == "error" and finish.failure.code == "TRANSPORT"


def test_no_response_within_the_timeout_is_a_timeout_failure(server):
    server.reply(Stall(seconds=300))
    started = time.monotonic()
    [finish] = ask(model_for(server, timeout=0.3), hello())
    assert finish.kind == "error" and finish.failure.code == "TIMEOUT"
    assert time.monotonic() - started < 120  # given up at its timeout, not after the 300 s stall


# -- cancellation --------------------------------------------------------------------------


async def test_cancelling_the_consuming_task_closes_the_http_stream_promptly(server):
    server.reply(Stream(oa_text_stream("a", "b", "c"), stall_after=3, stall_seconds=300))
    seen: list = []

    task = await consume_until_stalled(server, model_for(server), hello(), Signal(), seen, expect=2)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    closed_at = wait_for_hangup(server)
    assert closed_at is not None, "the server never saw the connection close"
    assert closed_at - cancelled_at < 120  # prompt: the stalled stream would hold for 300 s
    assert seen == [TextDelta("a"), TextDelta("b")]


async def test_setting_the_signal_ends_a_stalled_stream_without_finish_and_closes_it(server):
    server.reply(Stream(oa_text_stream("a", "b"), stall_after=2, stall_seconds=300))
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


async def test_signal_cancelled_while_waiting_for_headers_returns_promptly(server):
    server.reply(Stall(seconds=300))
    signal = Signal()

    task = asyncio.ensure_future(collect(model_for(server), hello(), signal))
    while not server.stalled.is_set():
        await asyncio.sleep(0.005)
    signal.cancel()
    assert await asyncio.wait_for(task, 120) == []  # the stall would hold for 300 s


# -- model strings -------------------------------------------------------------------------


def test_model_strings_resolve_with_full_names_and_providers(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11434")
    cases = {
        "openai:gpt-4.1": ("openai", "gpt-4.1", "https://api.openai.com/v1"),
        "ollama:qwen3": ("ollama", "qwen3", "http://gpu-box:11434/v1"),
        "deepseek:deepseek-chat": ("deepseek", "deepseek-chat", "https://api.deepseek.com"),
        "openai-compatible:llama@http://127.0.0.1:8000/v1": (
            "openai-compatible",
            "llama",
            "http://127.0.0.1:8000/v1",
        ),
    }
    for spec, (provider, model_id, base_url) in cases.items():
        model = resolve_model(spec)
        assert (model.name, model.provider, model.model, model.base_url) == (
            spec,
            provider,
            model_id,
            base_url,
        )


def test_ollama_defaults_to_localhost_and_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    assert resolve_model("ollama:qwen3").base_url == "http://localhost:11434/v1"


def test_openai_compatible_without_a_base_url_is_a_clear_error():
    with pytest.raises(NbagentError, match="NBAGENT_BASE_URL"):
        resolve_model("openai-compatible:llama")


def test_openai_compatible_reads_nbagent_env_vars(server, monkeypatch):
    monkeypatch.setenv("NBAGENT_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("NBAGENT_API_KEY", "local-key")
    server.reply(Stream(oa_text_stream("ok")))
    chunks = ask(resolve_model("openai-compatible:llama"), hello())
    assert chunks[-1] == Finish("stop")
    assert server.requests[0].headers["authorization"] == "Bearer local-key"
    assert server.bodies[0]["model"] == "llama"


def test_importing_nbagent_and_resolving_does_not_import_the_sdk():
    code = (
        "import sys, nbagent, nbagent.models\n"
        "m = nbagent.models.resolve_model('openai:gpt-4.1')\n"
        "a = nbagent.models.resolve_model('anthropic:claude-x')\n"
        "print('openai' in sys.modules, 'anthropic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
