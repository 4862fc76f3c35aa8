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
