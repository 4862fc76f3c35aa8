"""The records of forks and what-if replays (SPEC §4, §11): ``session/forked`` and
``session/replayed``. Core records like the others (``nbagent.log.events`` re-exports them, and
defining them registers them with the adapter); kept apart so ``events.py`` stays one screenful of
the turn's own records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from nbagent._json import FrozenDict, FrozenList
from nbagent.log.record import Record


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else FrozenDict()


@dataclass(frozen=True, slots=True)
class SessionForked(Record):
    """``session/forked``: a fork's first own event; ``at`` = last copied seq (§11.1)."""

    type: ClassVar[str] = "session/forked"
    parent: str
    at: int
    turn: int | None = None
    purpose: str | None = None
    """``"attribution"`` for the runs of SPEC §11.5; absent for a fork a person made."""

    def to_json(self) -> FrozenDict:
        extra: dict[str, Any] = {} if self.turn is None else {"turn": self.turn}
        if self.purpose is not None:
            extra["purpose"] = self.purpose
        return FrozenDict({"parent": self.parent, "at": self.at, **extra})


@dataclass(frozen=True, slots=True)
class SessionReplayed(Record):
    """``session/replayed``: the edit a what-if replay made of the parent's turn (§11.2), written in
    the commit of the replayed turn's ``turn/start``, just before it. ``move`` maps an id to its
    step ("delivered during step k", 0 = before the turn); ``add`` is ``[{id, step}]``."""

    type: ClassVar[str] = "session/replayed"
    turn: int
    parent_turn: int
    drop: tuple[str, ...] = ()
    move: Mapping[str, int] = field(default_factory=FrozenDict)
    add: tuple[Mapping[str, Any], ...] = ()
    labels: Mapping[str, str] = field(default_factory=FrozenDict)
    """A short name of each id named above (``note``, ``steer``): a dropped message is in no log
    of the fork, and the views still say what was dropped."""

    def to_json(self) -> FrozenDict:
        return FrozenDict({
            "turn": self.turn,
            "parent_turn": self.parent_turn,
            "drop": FrozenList(self.drop),
            "move": FrozenDict(self.move),
            "add": FrozenList(FrozenDict(a) for a in self.add),
            "labels": FrozenDict(self.labels),
        })  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionReplayed:
        move = _map(data.get("move"))
        add_value, drop_value = data.get("add"), data.get("drop")
        add = add_value if isinstance(add_value, list | tuple) else ()
        drop = drop_value if isinstance(drop_value, list | tuple) else ()
        return cls(
            data["turn"],
            data["parent_turn"],
            tuple(str(i) for i in drop),
            FrozenDict({str(k): v for k, v in move.items()}),
            tuple(a for a in add if isinstance(a, Mapping)),
            FrozenDict({str(k): str(v) for k, v in _map(data.get("labels")).items()}),
        )
