"""An image in an MCP tool result reaches the providers that take images (SPEC §9.7): OpenAI-compatible
APIs get it as an ``image_url`` part (in a user message after the tool messages, which take only
text), Anthropic as an image block inside the ``tool_result``. The image comes from a real server
(tests/mcp_servers/demo.py's ``pixel``) through the log's history into each wire format."""

from __future__ import annotations

import asyncio
import sys

import pytest
from mcp_helpers import DEMO
from test_mcp_http import call

import nbagent
from nbagent.log.messages import Message
from nbagent.models import ScriptedModel
from nbagent.models._anthropic_wire import to_anthropic_messages
from nbagent.models._openai_wire import to_openai_messages
from nbagent.testing import derive_history

pytest.importorskip("mcp")


@pytest.fixture(scope="module")
def history() -> tuple[Message, ...]:
    from nbagent.mcp import servers

    servers.FIRST_REQUEST_WAIT, wait = 300.0, servers.FIRST_REQUEST_WAIT
    try:
        return asyncio.run(_history())
    finally:
        servers.FIRST_REQUEST_WAIT = wait


async def _history() -> tuple[Message, ...]:
    model = ScriptedModel([call("demo__pixel", {}), "a red pixel"])
    agent = nbagent.open_session(None, model=model)
    agent.add_mcp_server("demo", command=sys.executable, args=[DEMO], allow_read_only=True)
    await agent.run("what does the pixel look like?")
    messages = derive_history(agent.events)
    await agent.close()
    return messages


def test_openai_compatible_requests_carry_the_image_as_an_image_url_part(history):
    wire = to_openai_messages(history, "system")
    roles = [m["role"] for m in wire]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant"]
    tool, images = wire[3], wire[4]
    assert tool["content"] == "[image 1: image/png, in the next user message]"
    text, part = images["content"]
    assert text["type"] == "text"
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


def test_a_server_taking_no_content_parts_gets_a_placeholder(history):
    wire = to_openai_messages(history, None, flatten_text=True)
    assert [m["role"] for m in wire] == ["user", "assistant", "tool", "assistant"]
    assert wire[2]["content"] == "[image]"


def test_anthropic_requests_carry_the_image_inside_the_tool_result(history):
    wire = to_anthropic_messages(history)
    (result,) = wire[2]["content"]
    assert result["type"] == "tool_result"
    (image,) = result["content"]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert image["source"]["data"].startswith("iVBOR")
