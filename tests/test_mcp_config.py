"""MCP tool names and the ``{"mcpServers": ...}`` file (SPEC §9.7)."""

from __future__ import annotations

import json
import re

import pytest

from nbagent.mcp.config import ConfigError, load_config
from nbagent.mcp.names import reduce_name, server_prefix, tool_name

SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_a_plain_tool_name_is_kept_as_server__tool():
    assert tool_name(server_prefix("files"), "read_file") == "files__read_file"


def test_unsafe_characters_are_replaced_and_the_name_keeps_a_stable_hash():
    dotted = tool_name("gh", "repos.list")
    underscored = tool_name("gh", "repos_list")
    assert SAFE.match(dotted) and dotted.startswith("gh__repos_list_")
    assert underscored == "gh__repos_list"
    assert dotted != underscored
    assert tool_name("gh", "repos.list") == dotted


def test_a_long_name_is_cut_to_64_characters_and_two_long_names_stay_apart():
    first = tool_name(server_prefix("s" * 50), "t" * 80 + "a")
    second = tool_name(server_prefix("s" * 50), "t" * 80 + "b")
    assert SAFE.match(first) and SAFE.match(second)
    assert first != second
    assert len(server_prefix("s" * 50)) <= 32


def test_a_name_of_only_unsafe_characters_still_gets_a_name():
    assert SAFE.match(reduce_name("ä.ö", 20))


def test_the_common_config_file_gives_stdio_and_http_servers(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "npx", "args": ["-y", "server-files", "."], "env": {"ROOT": "/x"}},
                    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "autoApprove": []},
                    "off": {"command": "x", "disabled": True},
                }
            }
        )
    )
    files, web = load_config(path)
    assert (files.name, files.command, files.args, dict(files.env)) == (
        "files",
        "npx",
        ("-y", "server-files", "."),
        {"ROOT": "/x"},
    )
    assert (web.name, web.url, web.transport) == ("web", "http://127.0.0.1:9/mcp", "http")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "is not valid JSON"),
        ('{"servers": {}}', 'has no "mcpServers" object'),
        ('{"mcpServers": {"a": []}}', "server 'a' must be an object"),
        ('{"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}', "uses SSE"),
        ('{"mcpServers": {"a": {"args": ["x"]}}}', "give either command="),
        ('{"mcpServers": {"a": {"command": "x", "args": "-v"}}}', "args must be a list of strings"),
    ],
)
def test_a_bad_config_file_is_refused_naming_the_file_and_the_cause(tmp_path, content, message):
    path = tmp_path / "mcp.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        load_config(path)
    assert str(path) in str(caught.value)


def test_a_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"cannot read MCP config .*nope\.json"):
        load_config(tmp_path / "nope.json")
