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
    config = load_config(path)
    assert config.problems == []
    files, web = config.servers
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
    ],
)
def test_a_file_that_cannot_be_read_is_refused_naming_the_file_and_the_cause(tmp_path, content, message):
    path = tmp_path / "mcp.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        load_config(path)
    assert str(path) in str(caught.value)


def test_each_unusable_entry_is_one_problem_line_and_the_others_are_kept(tmp_path, monkeypatch):
    monkeypatch.delenv("NBAGENT_TEST_UNSET", raising=False)
    path = tmp_path / "mcp.json"
    entries = {
        "a": [],
        "b": {"args": ["x"]},
        "c": {"command": "x", "args": "-v"},
        "d": {"type": "websocket", "url": "ws://h"},
        "e": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${NBAGENT_TEST_UNSET}"}},
        "f": {"type": "sse"},
        "good": {"command": "x"},
        "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    }
    path.write_text(json.dumps({"mcpServers": entries}))
    config = load_config(path)
    assert [s.name for s in config.servers] == ["good", "events"]
    assert config.servers[1].transport == "sse"
    assert config.problems == [
        "server 'a': must be an object",
        "server 'b': give either command= (a program speaking MCP on stdio) or url= (a streamable HTTP "
        "endpoint), not both or neither",
        "server 'c': args must be a list of strings, e.g. ['-m', 'my_server']",
        "server 'd': unknown type 'websocket'; use stdio, http or sse",
        "server 'e': headers refers to ${NBAGENT_TEST_UNSET}, which is not set in the kernel's environment",
        "server 'f': type sse needs a \"url\"",
    ]


def test_headers_and_env_take_the_kernel_s_variables_by_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("NBAGENT_TEST_TOKEN", "t0ken-value")
    path = tmp_path / "mcp.json"
    entries = {
        "web": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${env:NBAGENT_TEST_TOKEN}"}},
        "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${NBAGENT_TEST_TOKEN}", "MODE": "plain"}},
    }
    path.write_text(json.dumps({"mcpServers": entries}))
    web, gh = load_config(path).servers
    assert dict(web.headers) == {"Authorization": "Bearer t0ken-value"}
    assert dict(gh.env) == {"GITHUB_TOKEN": "t0ken-value", "MODE": "plain"}


def test_headers_are_for_http_servers_and_must_be_strings():
    from nbagent.mcp.config import server_spec

    with pytest.raises(ValueError, match="headers= is for an HTTP server"):
        server_spec("x", command="x", headers={"A": "b"})
    with pytest.raises(TypeError, match="headers must map header names to string values"):
        server_spec("x", url="http://h/mcp", headers={"A": 1})  # type: ignore[dict-item]


def test_a_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"cannot read MCP config .*nope\.json"):
        load_config(tmp_path / "nope.json")
