"""The inbox object: operations, splice normalization, identity rules, notices (SPEC §3.4, §3.5)."""

from __future__ import annotations

import pytest
from eventtrace import trace

import nbagent
from nbagent import UserMessage
from nbagent.core.inbox import normalize
from nbagent.models import ScriptedModel
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores


def m(text: str) -> UserMessage:
    return UserMessage.text(text, source={"kind": "cell"})


@pytest.mark.parametrize(
    ("length", "start", "count", "expected"),
    [
        (3, 0, 1, (0, 1)),
        (3, -1, 1, (2, 1)),
        (3, -10, 1, (0, 1)),
        (3, 10, 1, (3, 0)),
        (3, 1, 10, (1, 2)),
        (3, 1, -2, (1, 0)),
        (3, 1, None, (1, 2)),
        (0, 0, 5, (0, 0)),
    ],
)
def test_splice_coordinates_normalize_like_array_splice(length, start, count, expected):
    assert normalize(length, start, count) == expected


async def test_operations_record_one_splice_each_and_never_wake(db):
    agent = nbagent.open_session(db, model=ScriptedModel([]))
    notices = []
    for name in ("inbox/inserted", "inbox/discarded"):
        agent.on(name, lambda n: notices.append((n.name, n.message.plain_text)))
    a, b, c = m("a"), m("b"), m("c")
    agent.inbox.append("next-step", a)
    agent.inbox.prepend("next-step", b)
    agent.inbox.append("next-turn", c)
    assert [x.plain_text for x in agent.inbox.next_step] == ["b", "a"]
    assert agent.inbox.replace(a.id, m("a2"))
    assert not agent.inbox.replace("missing", m("x"))
    assert agent.inbox.remove(b.id) and not agent.inbox.remove(b.id)
    removed = agent.inbox.splice("next-turn", -1, 5, [m("d"), m("e")])
    assert [x.plain_text for x in removed] == ["c"]
    assert agent.status == "idle"
    assert trace(agent.events) == [
        "INS ns 0 ['a']",
        "INS ns 0 ['b']",
        "INS nt 0 ['c']",
        "CAN ns 1 1 ['a2']",
        "CAN ns 0 1",
        "CAN nt 0 1 ['d', 'e']",
    ]
    assert notices == [
        ("inbox/inserted", "a"),
        ("inbox/inserted", "b"),
        ("inbox/inserted", "c"),
        ("inbox/discarded", "a"),
        ("inbox/inserted", "a2"),
        ("inbox/discarded", "b"),
        ("inbox/discarded", "c"),
        ("inbox/inserted", "d"),
        ("inbox/inserted", "e"),
    ]
    assert agent.inbox.clear() == 3
    assert trace(agent.events)[-2:] == ["CAN ns 0 1", "CAN nt 0 2"]
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()


async def test_a_mutation_that_changes_nothing_records_nothing(db):
    agent = nbagent.open_session(db)
    assert agent.inbox.splice("next-step", 0, 3, []) == ()
    assert agent.inbox.clear() == 0
    assert not agent.inbox.remove("nope")
    assert agent.events == ()
    await agent.close()


async def test_an_id_can_be_pending_once_across_both_queues(db):
    agent = nbagent.open_session(db)
    a = agent.inject(m("a"))
    with pytest.raises(ValueError, match="already pending"):
        agent.followup(a)
    with pytest.raises(ValueError, match="already pending"):
        agent.inbox.append("next-turn", a)
    edited = a.model_copy(update={"content": ({"type": "text", "text": "edited"},)})
    assert agent.inbox.replace(a.id, edited)
    assert agent.inbox.next_step[0].plain_text == "edited" and agent.inbox.next_step[0].id == a.id
    assert len(agent.events) == 2 and agent.status == "idle"
    await agent.close()


async def test_event_notices_come_after_the_queues_are_updated(db):
    agent = nbagent.open_session(db)
    seen = []
    agent.on("event", lambda n: seen.append((n.event.seq, len(agent.inbox.next_step))))
    agent.inject("x")
    agent.inject("y")
    assert seen == [(0, 1), (1, 2)]
    await agent.close()


async def test_a_failing_callback_is_logged_and_never_breaks_the_agent(db, caplog):
    agent = nbagent.open_session(db, model=ScriptedModel(["fine"]))

    def broken(notice):
        raise RuntimeError("callback bug")

    agent.on("event", broken)
    agent.on("status", broken)
    r = await agent.run("go")
    assert r.text == "fine"
    await agent.close()
    assert "callback bug" in caplog.text


async def test_unsubscribing_stops_notices(db):
    agent = nbagent.open_session(db)
    seen = []
    off = agent.on("inbox/inserted", lambda n: seen.append(n.message.plain_text))
    agent.inject("one")
    off()
    agent.inject("two")
    assert seen == ["one"]
    await agent.close()


async def test_a_text_delivery_skips_the_pending_id_scan_and_a_message_delivery_does_not(db, monkeypatch):
    """A ``str`` becomes a message with an id drawn for it, which no pending message can hold: its
    splice is planned without reading every pending message (issue #20). A ``UserMessage`` passed
    in is checked against them."""
    import nbagent.core.driver as driver_module
    from nbagent.core.inbox import InboxState, plan_splice

    planned: list[bool] = []

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        planned.append(kwargs.get("fresh", False))
        return plan_splice(*args, **kwargs)

    monkeypatch.setattr(driver_module, "plan_splice", recording)
    agent = nbagent.open_session(db)
    a = agent.inject("typed text")
    agent.inject(m("built by the caller"))
    with pytest.raises(ValueError, match="already pending"):
        agent.inject(a)
    agent.followup("a prompt")
    assert planned[:4] == [True, False, False, True]  # (then the turn's claims)
    state = InboxState((a,), ())
    assert plan_splice(state, "next-turn", 1, 0, (a,), fresh=True) is not None  # the caller's word
    with pytest.raises(ValueError, match="already pending"):
        plan_splice(state, "next-turn", 1, 0, (a,))
    await agent.close()
