"""A provider model calls ``describe_variable`` through the real SDKs, against loopback servers speaking
the OpenAI and Anthropic wire protocols: the schemas the provider is offered, and the DataFrame
summary it gets back as the tool result."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from eventtrace import run, trace
from IPython.core.interactiveshell import InteractiveShell
from provider_servers import (
    ProviderServer,
    Stream,
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_end,
    an_message_start,
    an_text_stream,
    oa_text_stream,
    oa_tool_call_stream,
)

import nbagent
from nbagent.notebook.tools.kernel_tools import TOOL_NAMES, KernelTools
from nbagent.testing import check_invariants

PROVIDER_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
PROVIDER_ENV += (
    "NBAGENT_BASE_URL",
    "NBAGENT_API_KEY",
    "OLLAMA_HOST",
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL",
)


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderServer]:
    """A provider server on 127.0.0.1 and dummy keys: nothing leaves this machine."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy")
    with ProviderServer() as srv:
        yield srv


@pytest.fixture
def tools() -> Iterator[tuple[Any, ...]]:
    """The built-in tools over a shell holding ``weather``; namespace work runs inline (main thread)."""
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    shell.user_ns["weather"] = pd.DataFrame({"city": ["Oslo", "Lima", "Pune"], "temp_c": [3.5, 18.2, 31.0]})

    async def inline(fn: Any) -> Any:
        return fn()

    yield KernelTools(shell, on_main=inline).tools
    shell.reset(new_session=True)


def summary_of_weather(text: str) -> None:
    assert text.startswith('<dataframe name="weather" library="pandas" type="pandas.DataFrame" shape="3 x 2"')
    assert "| Oslo | 3.5 |\n| Lima | 18.2 |\n| Pune | 31 |" in text  # a frame this small is sent whole
    assert text.rstrip().endswith("</dataframe>")


def tool_result(agent: nbagent.Agent) -> str:
    (event,) = [e for e in agent.events if e.type == "tool/result"]
    assert "error" not in event.data
    return event.data["message"]["content"][0]["content"][0]["text"]


def test_an_openai_wire_model_describes_a_dataframe(loopback, tools, db):
    loopback.reply(
        Stream(oa_tool_call_stream([("call_w", "describe_variable", '{"name": "weather"}')], split=6)),
        Stream(oa_text_stream("Pune is ", "warmest.")),
    )

    async def main() -> nbagent.Agent:
        agent = nbagent.open_session(db, model=f"openai-compatible:m@{loopback.url}/v1", tools=tools)
        await agent.run("Which city is warmest?")
        await agent.close()
        return agent

    agent = run(main())
    check_invariants(agent.events)
    assert [x for x in trace(agent.events) if x.startswith(("TC", "TR", "TE", "AM"))] == [
        "AM 1.1 ['call_w']",
        "TC call_w",
        "TR call_w",
        "AM 1.2 'Pune is warmest.'",
        "TE 1 completed",
    ]
    first, second = loopback.bodies
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert tuple(offered) == TOOL_NAMES
    assert offered["describe_variable"]["parameters"]["required"] == ["name"]
    assert offered["recent_cells"]["parameters"]["properties"]["count"]["default"] == 5
    assert "signal" not in json.dumps(offered["run_code"]["parameters"])
    summary_of_weather(tool_result(agent))
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_w", "content": tool_result(agent)}


def test_an_anthropic_wire_model_describes_a_dataframe(loopback, tools, db):
    tool_use = [
        an_message_start(),
        an_block_start(0, {"type": "tool_use", "id": "toolu_w", "name": "describe_variable", "input": {}}),
        an_delta(0, {"type": "input_json_delta", "partial_json": '{"name": '}),
        an_delta(0, {"type": "input_json_delta", "partial_json": '"weather"}'}),
        an_block_stop(0),
        *an_message_end("tool_use"),
    ]
    loopback.reply(Stream(tool_use), Stream(an_text_stream("Pune is warmest.")))
    import nbagent.models.anthropic as provider

    async def main() -> nbagent.Agent:
        model = provider.AnthropicModel("claude-test", base_url=loopback.url)
        agent = nbagent.open_session(db, model=model, tools=tools)
        await agent.run("Which city is warmest?")
        await agent.close()
        return agent

    agent = run(main())
    check_invariants(agent.events)
    first, second = loopback.bodies
    offered = {t["name"]: t for t in first["tools"]}
    assert tuple(offered) == TOOL_NAMES
    assert offered["describe_variable"]["input_schema"]["properties"]["name"]["type"] == "string"
    summary_of_weather(tool_result(agent))
    assert second["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_w",
                "content": [{"type": "text", "text": tool_result(agent)}],
            }
        ],
    }
