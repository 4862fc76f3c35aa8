"""Going to a turn of a long session through the REST API: the window around turn N, the pages after
it up to the newest, and a bounded search over turn titles, none of them folding the whole log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

import server_client
from lab_sessions import write_synthetic
from pytest_jupyter.jupyter_server import *  # noqa: F403
from server_client import API
from test_server_tab import full_fold, turns_of, window

from nbagent.store import budget as budget_module

jp_server_config = server_client.jp_server_config
get = server_client.get

TURNS = 3000
TITLES = {7: "Where did the refunds go?", 1234: "Plot REFUNDS by region", 2999: "refunds, once more"}


@pytest.fixture
def long_session(jp_root_dir: Path) -> tuple[Path, str, int]:
    path = jp_root_dir / "long.nbagent.sqlite"
    sid, events = write_synthetic(path, TURNS, titles=TITLES)
    return path, sid, events


def top_turns(bundle: dict[str, Any]) -> list[int]:
    return [n["turn"] for n in bundle["nodes"] if n["type"] == "turn" and n["parent"] is None]


def test_a_window_around_a_turn_and_the_pages_after_it_reach_the_newest(
    long_session: tuple[Path, str, int], get: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, sid, events = long_session
    # Folding turn 1's window reads its own rows, not the 3,000 turns after them.
    spent: list[int] = []
    real = budget_module.Budget.spend
    monkeypatch.setattr(budget_module.Budget, "spend", lambda self, w, n: (spent.append(n), real(self, w, n)))
    first = window(get, path, sid, window=20, turn=1)
    assert top_turns(first) == list(range(1, 21)) and first["first_turn"] == 1 and first["last_turn"] == 20
    assert first["complete"] is True and first["log_seq"] == events
    assert first["summary"] == f"{TURNS} turns · {events} events"
    assert len(spent) < 2000, len(spent)  # 20 turns of 17 events and a few dozen index lookups
    monkeypatch.undo()

    middle = window(get, path, sid, window=20, turn=1234)
    assert top_turns(middle) == list(range(1225, 1245))
    whole = full_fold(path, sid)
    assert turns_of(middle["nodes"], 1225, 1244) == turns_of(whole["nodes"], 1225, 1244) == middle["nodes"]
    assert next(n for n in middle["nodes"] if n["id"] == "turn-1234")["title"] == TITLES[1234]
    end = window(get, path, sid, window=20, turn=TURNS)
    assert top_turns(end) == list(range(TURNS - 19, TURNS + 1))

    after = window(get, path, sid, window=20, after=1244)
    assert top_turns(after) == list(range(1245, 1265)) and after["pending"] == {
        "next_step": [],
        "next_turn": [],
    }
    assert turns_of(after["nodes"], 1245, 1264) == turns_of(whole["nodes"], 1245, 1264) == after["nodes"]
    last = window(get, path, sid, window=20, after=TURNS - 5)
    assert top_turns(last) == list(range(TURNS - 4, TURNS + 1)) and last["last_turn"] == TURNS


def test_a_jump_too_long_for_one_fold_holds_fewer_turns_around_the_same_place(
    jp_root_dir: Path, get: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbagent.labserver import handlers

    path = jp_root_dir / "pages.nbagent.sqlite"
    sid, _ = write_synthetic(path, 60)
    monkeypatch.setattr(handlers, "FOLD_EVENTS", 100)  # 20 turns of 17 events do not fit; 5 do
    around = window(get, path, sid, window=20, turn=30)
    assert top_turns(around) == [28, 29, 30, 31, 32] and around["complete"] is True
    after = window(get, path, sid, window=20, after=40)
    assert top_turns(after) == [41, 42, 43, 44, 45]


def test_a_search_over_turn_titles_is_case_blind_paged_and_bounded(
    long_session: tuple[Path, str, int], get: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, sid, _ = long_session
    status, found = get(*API, sid, "timeline", file=path.name, find="refunds")
    assert status == 200
    expected = [{"turn": t, "title": TITLES[t]} for t in sorted(TITLES)]
    assert found == {"matches": expected, "next": None, "turns": TURNS}
    # At most `limit` matches; `next` goes on from where it stopped.
    _, first = get(*API, sid, "timeline", file=path.name, find="REFUNDS", limit=2)
    assert first["matches"] == expected[:2] and first["next"] == 1234
    _, rest = get(*API, sid, "timeline", file=path.name, find="REFUNDS", limit=2, after=first["next"])
    assert rest == {"matches": expected[2:], "next": None, "turns": TURNS}
    # The benchmark's prompt names every turn by its number.
    _, numbered = get(*API, sid, "timeline", file=path.name, find="[2500] summarize")
    assert [m["turn"] for m in numbered["matches"]] == [2500]
    assert get(*API, sid, "timeline", file=path.name, find="no such title")[1]["matches"] == []

    # A search bounded in rows answers with where it stopped, and going on finds the rest.
    from nbagent.labserver import jump

    monkeypatch.setattr(jump, "SCAN_EVENTS", 500)
    monkeypatch.setattr(jump, "SCAN_PAGE", 100)
    turns: list[int] = []
    after, asks = 0, 0
    while after is not None:
        _, page = get(*API, sid, "timeline", file=path.name, find="refunds", after=after)
        turns += [m["turn"] for m in page["matches"]]
        assert page["next"] is None or page["next"] > after
        after, asks = page["next"], asks + 1
    assert turns == sorted(TITLES) and asks > 10


@pytest.mark.parametrize(
    ("params", "status", "says"),
    [
        ({"window": 20, "turn": 31}, 404, "has no turn 31 (it has 30)"),
        ({"window": 20, "after": 30}, 404, "has no turn after 30"),
        ({"window": 20, "turn": 0}, 422, "turn must be between 1 and"),
        ({"window": 20, "turn": 5, "before": 9}, 422, "give one of turn, before and after"),
        ({"window": 20, "turn": "x"}, 400, "turn must be an integer"),
        ({"find": ""}, 422, "find must be 1 to 200 characters"),
        ({"find": "   "}, 422, "find must be 1 to 200 characters"),
        ({"find": "x" * 201}, 422, "find must be 1 to 200 characters"),
        ({"find": "x", "limit": 101}, 422, "limit must be between 1 and 100"),
        ({"find": "x", "after": -1}, 422, "after must be between 0 and"),
    ],
)
def test_bad_jumps_and_searches_are_refused_with_what_was_wrong(
    jp_root_dir: Path, get: Any, params: dict[str, Any], status: int, says: str
) -> None:
    path = jp_root_dir / "short.nbagent.sqlite"
    sid, _ = write_synthetic(path, 30)
    got, body = get(*API, sid, "timeline", file=path.name, **params)
    assert got == status and says in body["message"], (got, body)
