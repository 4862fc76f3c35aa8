import copy

import pytest
from pydantic import ValidationError

from nbagent import UserMessage
from nbagent.log.messages import message_from_json


def test_text_builds_a_user_sourced_one_block_message():
    m = UserMessage.text("hello")
    assert m.role == "user"
    assert m.source == {"kind": "user"}
    assert m.content == ({"type": "text", "text": "hello"},)
    assert m.id


def test_caller_mutation_does_not_reach_the_recorded_copy():
    block = {"type": "text", "text": "a", "meta": {"k": [1, 2]}}
    m = UserMessage(content=[block], source={"kind": "cell", "label": "x"})
    block["meta"]["k"].append(3)
    block["text"] = "changed"
    assert m.content[0]["text"] == "a"
    assert m.content[0]["meta"]["k"] == [1, 2]


def test_frozen_content_refuses_mutation():
    m = UserMessage.text("x")
    with pytest.raises(TypeError):
        m.content[0]["text"] = "y"  # type: ignore[index]
    with pytest.raises(ValidationError):
        m.id = "other"  # type: ignore[misc]
    assert copy.deepcopy(m) == m


@pytest.mark.parametrize(
    "bad",
    [float("nan"), float("inf"), object(), {1: "int key"}, b"bytes", {1, 2}],
)
def test_non_json_content_is_refused_with_type_error(bad):
    with pytest.raises(TypeError):
        UserMessage(content=[{"type": "text", "text": "x", "extra": bad}])


def test_source_needs_a_kind():
    with pytest.raises(TypeError, match="kind"):
        UserMessage(content="x", source={"label": "no kind"})


def test_stored_json_round_trips_to_an_equal_message():
    m = UserMessage(content=[{"type": "text", "text": "hi"}], source={"kind": "plugin", "plugin": "p"})
    assert message_from_json(m.to_json()) == m


# -- blocks are checked on the way in (issue #30), never when read back -----------------------------


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ([{"type": "bogus"}], r"content\[0\] has type 'bogus', which is not a block type"),
        (
            [{"type": "text", "text": "a"}, {"type": "text"}],
            r"content\[1\] \(text\) needs 'text' as a str, got missing",
        ),
        ([{"type": "text", "text": 3}], r"content\[0\] \(text\) needs 'text' as a str, got a int"),
        (
            [{"type": "image", "mime": "image/png"}],
            r"content\[0\] \(image\) needs 'data' \(base64\) or 'path'",
        ),
        (
            [{"type": "image", "mime": 1, "data": "AA"}],
            r"content\[0\] \(image\) needs 'mime' as a str, got a int",
        ),
        ([{"type": "tool-call", "id": "c", "name": "t"}], r"content\[0\] \(tool-call\) needs 'arguments'"),
        (
            [{"type": "tool-result", "tool_call_id": "c", "content": [{"type": "nope"}], "is_error": False}],
            r"content\[0\]\.content\[0\] has type 'nope'",
        ),
        (
            [{"type": "tool-result", "tool_call_id": "c", "content": [], "is_error": "no"}],
            r"content\[0\] \(tool-result\) needs 'is_error' as a bool, got a str",
        ),
    ],
)
def test_a_bad_block_is_refused_naming_its_index_and_what_is_wrong(content, says):
    with pytest.raises(ValidationError, match=says) as caught:
        UserMessage(content=content)
    assert isinstance(caught.value, ValueError)


def test_every_block_shape_of_the_spec_is_accepted_with_producer_fields_kept():
    content = [
        {"type": "text", "text": "a", "meta": {"k": 1}},
        {"type": "image", "mime": "image/png", "data": "AAAA"},
        {"type": "image", "mime": "image/png", "path": "plot.png"},
        {"type": "image", "path": "plot.png"},
        {"type": "tool-call", "id": "c", "name": "t", "arguments": "{}"},
        {
            "type": "tool-result",
            "tool_call_id": "c",
            "content": [{"type": "text", "text": "r"}],
            "is_error": False,
        },
        {"type": "reasoning", "text": "hmm"},
    ]
    assert [dict(b) for b in UserMessage(content=content).content] == content


def test_a_bad_block_reaches_no_log(tmp_path):
    import asyncio

    import nbagent
    from nbagent.models import ScriptedModel

    async def main() -> None:
        agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=ScriptedModel(["x"]))
        try:
            before = len(agent.events)
            with pytest.raises(ValueError, match=r"content\[0\] has type 'bogus'"):
                agent.inject(UserMessage(content=[{"type": "bogus"}]))
            assert len(agent.events) == before
            assert not agent.inbox.next_step and not agent.inbox.next_turn
        finally:
            await agent.close()

    asyncio.run(main())


def test_a_stored_block_of_an_unknown_type_is_read_back_as_it_is():
    stored = {"id": "m1", "role": "user", "content": [{"type": "audio", "x": 1}], "source": {"kind": "user"}}
    assert message_from_json(stored).to_json() == stored


def test_a_log_holding_a_block_type_this_version_does_not_know_resumes(tmp_path):
    """An older (or newer) log's block of an unknown type stays an opaque block: resume, the full
    read of the history and a further turn all work, and the block is kept as stored."""
    import asyncio
    import sqlite3

    import nbagent
    from nbagent.models import ScriptedModel

    path = tmp_path / "s.nbagent.sqlite"

    async def first() -> str:
        agent = nbagent.open_session(path, model=ScriptedModel(["one"]))
        await agent.run("first")
        await agent.close()
        return agent.session_id

    sid = asyncio.run(first())
    conn = sqlite3.connect(path)
    conn.execute(
        'UPDATE events SET data = json_set(data, \'$.message.content[0]\', json(\'{"type": "audio", "ref": 7}\'))'
        " WHERE type = 'assistant/message'"
    )
    conn.commit()
    conn.close()

    async def resumed() -> None:
        agent = nbagent.resume_session(path, model=ScriptedModel(["two"]))
        try:
            history = agent.driver.history()
            assert {"type": "audio", "ref": 7} in [dict(b) for m in history for b in m.content]
            await agent.run("second")
        finally:
            await agent.close()

    asyncio.run(resumed())
    stored = [e.data for e in nbagent.read_events(path, sid) if e.type == "assistant/message"]
    assert stored[0]["message"]["content"][0] == {"type": "audio", "ref": 7}
    assert len(stored) == 2
