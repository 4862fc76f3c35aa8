"""The turn diff (SPEC §11.3): a moved message, an added one, turns of different lengths, and the
paintings (data escaped)."""

from __future__ import annotations

from pathlib import Path

from test_replay import _parent, _script

import nbagent
from nbagent.models import ScriptedModel
from nbagent.views.diff import diff_markdown, diff_text


def _marks(rows) -> list[tuple[str, str]]:
    return [(m.first_line, m.mark) for m in rows]


async def test_a_steer_moved_a_step_earlier_is_marked_moved_on_both_sides(tmp_path: Path) -> None:
    parent, _, ids = await _parent(tmp_path / "s.nbagent.sqlite")
    child = parent.fork(before_turn=2, model=ScriptedModel(_script()))
    try:
        await child.replay(turn=2, move={ids["s2"]: 1})
        d = nbagent.diff(parent, child.session_id, turn_a=2, turn_b=2)
        assert [s.step for s in d.steps] == [1, 2, 3]
        first = d.steps[0]
        assert {m.mark for m in first.a + first.b} == {"same"} and not first.answer_changed
        second = d.steps[1]
        assert [m for m in second.a if m.mark != "same"] == []
        assert _marks(second.b)[-1] == ("s2", "moved")
        assert [mark for _, mark in _marks(second.b)[:-1]] == ["same"] * len(second.a)
        third = d.steps[2]
        assert ("s2", "moved") in _marks(third.a) and ("s2", "moved") in _marks(third.b)
        assert {mark for line, mark in _marks(third.a) + _marks(third.b) if line != "s2"} == {"same"}
        assert not any(s.answer_changed for s in d.steps)
        text = diff_text(d)
        assert "~ user" in text and "(answer changed)" not in text
    finally:
        await child.close()
        await parent.close()


async def test_an_added_message_and_a_shorter_turn(tmp_path: Path) -> None:
    parent, _, ids = await _parent(tmp_path / "s.nbagent.sqlite")
    child = parent.fork(before_turn=2, model=ScriptedModel(["a <b>short</b> *answer*"]))
    extra = nbagent.UserMessage.text("a <b>DataFrame</b> *snapshot*", {"kind": "note"})
    try:
        await child.replay(turn=2, drop=list(ids.values()), add=[(extra, 0)])
        d = nbagent.diff(parent, child, turn_a=2)
        assert len(d.steps) == 3
        step1 = d.steps[0]
        assert [m.mark for m in step1.a] == ["same"] * len(step1.a)  # an insertion is not a move
        assert [(m.id, m.mark) for m in step1.b if m.mark != "same"] == [(extra.id, "added")]
        assert step1.answer_changed and step1.answer_b is not None
        assert step1.answer_b.text == "a <b>short</b> *answer*"
        for missing in d.steps[1:]:
            assert missing.b == () and missing.answer_b is None and missing.answer_changed
            assert {m.mark for m in missing.a} == {"removed"}
        md = diff_markdown(d)
        assert "<b>" not in md and "*snapshot*" not in md and "&lt;b&gt;DataFrame" in md
        assert "no such step" in md and "the answer changed" in md
    finally:
        await child.close()
        await parent.close()
