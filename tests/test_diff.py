"""The turn diff (SPEC §11.3): a moved message, an added one, turns of different lengths, and the
paintings (data escaped)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_replay import _parent, _script

import nbagent
from nbagent.models import ScriptedModel
from nbagent.views.diff_paint import diff_markdown, diff_text


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
            # its new messages are removed; the history it carries that b's last request held too
            # (the pending context and the prompt) stays the same
            assert {m.mark for m in missing.a if not m.carried} == {"removed"}
            held = {m.id for m in step1.b}
            assert {m.mark for m in missing.a if m.carried and m.id in held} == {"same"}
        md = diff_markdown(d)
        assert "<b>" not in md and "*snapshot*" not in md and "&lt;b&gt;DataFrame" in md
        assert "no such step" in md and "the answer changed" in md
        from nbagent.views.diff_paint import diff_html

        html = diff_html(d)
        assert "<b>DataFrame</b>" not in html and "&lt;b&gt;DataFrame&lt;/b&gt; *snapshot*" in html
        assert "&lt;b&gt;short&lt;/b&gt;" in html and "<b>short</b>" not in html
    finally:
        await child.close()
        await parent.close()


async def test_carried_history_is_flagged_and_folded_into_one_line(tmp_path: Path) -> None:
    from nbagent.views.diff import diff_json
    from nbagent.views.diff_paint import diff_html

    parent, _, ids = await _parent(tmp_path / "s.nbagent.sqlite")
    child = parent.fork(before_turn=2, model=ScriptedModel(_script()))
    try:
        await child.replay(turn=2, move={ids["s2"]: 1})
        d = nbagent.diff(parent, child, turn_a=2)
        assert not any(m.carried for m in d.steps[0].a + d.steps[0].b)
        second = d.steps[1]
        assert [m.carried for m in second.a] == [True] * len(d.steps[0].a) + [False] * (
            len(second.a) - len(d.steps[0].a)
        )
        carried = sum(m.carried for m in second.b)
        assert carried == len(d.steps[0].b)
        text = diff_text(d)
        assert f"… {carried} messages carried from step 1" in text
        third = d.steps[2]
        differ = sum(m.carried and m.mark != "same" for m in third.b)
        assert differ == 1  # s2, carried in b's step 3 from b's step 2, moved
        assert f"carried from step 2 · {differ} differ" in text
        assert "<details>" in diff_markdown(d) and "<summary>" in diff_html(d)
        rows = diff_json(d)["steps"][1]["sides"][1]
        assert rows["carried_count"] == carried and rows["carried_text"].startswith(f"{carried} messages")
        assert [r["carried"] for r in rows["rows"]] == [m.carried for m in second.b]
    finally:
        await child.close()
        await parent.close()


async def test_a_move_to_a_step_the_other_side_lacks_is_moved_on_both_sides(tmp_path: Path) -> None:
    parent, _, ids = await _parent(tmp_path / "s.nbagent.sqlite")
    # The fork answers at once after step 1: its turn has two steps; the parent's had three.
    child = parent.fork(before_turn=2, model=ScriptedModel([_script()[0], "short"]))
    try:
        await child.replay(turn=2, move={ids["s2"]: 1})
        d = nbagent.diff(parent, child, turn_a=2)
        assert len(d.steps) == 3 and d.steps[2].b == ()
        assert ("s2", "moved") in _marks(d.steps[2].a)  # b holds it in step 2, a has no step 3 there
        assert ("s2", "moved") in _marks(d.steps[1].b)
        new_in_a3 = [m for m in d.steps[2].a if not m.carried]
        assert {m.mark for m in new_in_a3 if m.first_line != "s2"} == {"removed"}
    finally:
        await child.close()
        await parent.close()


async def test_a_changed_answer_has_a_word_level_diff_and_identical_turns_say_so(tmp_path: Path) -> None:
    from nbagent.views.diff import answer_words

    assert answer_words("The total is 120 USD.", "The total is 120 EUR.") == (
        ("=", "The total is 120 "),
        ("-", "USD."),
        ("+", "EUR."),
    )
    assert answer_words("", "x") == ()
    parent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=ScriptedModel(["one two three"]))
    await parent.run("go")
    same = parent.fork(before_turn=1, model=ScriptedModel(["one two three"]))
    other = parent.fork(before_turn=1, model=ScriptedModel(["one four three"]))
    try:
        await same.replay(turn=1)
        await other.replay(turn=1)
        d = nbagent.diff(parent, same, turn_a=1)
        assert d.identical
        assert (
            diff_text(d)
            .splitlines()[1]
            .endswith("are identical: 1 step, the same requests and the same answers")
        )
        assert len(diff_text(d).splitlines()) == 2
        changed = nbagent.diff(parent, other, turn_a=1)
        assert not changed.identical
        assert changed.steps[0].answer_diff == (("=", "one "), ("-", "two"), ("+", "four"), ("=", " three"))
        assert "one [-two-]{+four+} three" in diff_text(changed)
        with pytest.raises(ValueError, match=r"session [0-9a-f]{8} has no turn 5 \(its turns: 1\)"):
            nbagent.diff(parent, other, turn_a=5)
        with pytest.raises(ValueError, match=r"has no turn 2 \(its turns: 1\)"):
            nbagent.diff(parent, other, turn_a=1, turn_b=2)
    finally:
        await same.close()
        await other.close()
        await parent.close()


async def test_a_step_that_started_and_failed_shows_its_error(tmp_path: Path) -> None:
    from nbagent.models import Response

    parent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model=ScriptedModel(["fine"]))
    await parent.run("go")
    child = parent.fork(before_turn=1, model=ScriptedModel([Response(failure="AUTH")]))
    try:
        await child.replay(turn=1)
        d = nbagent.diff(parent, child, turn_a=1)
        assert len(d.steps) == 1 and d.steps[0].answer_b is not None
        assert d.steps[0].answer_b.error.startswith("AUTH: ")
        text = diff_text(d)
        assert "b answered: (the step failed: AUTH: " in text and "(no such step)" not in text
    finally:
        await child.close()
        await parent.close()
