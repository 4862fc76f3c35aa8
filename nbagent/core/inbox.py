"""The inbox: two queues of pending messages, a pure projection of ``agent/inbox/spliced`` events."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple, Protocol, cast

from nbagent.errors import SessionCorruptError
from nbagent.log.events import NEXT_STEP, NEXT_TURN, Splice
from nbagent.log.messages import UserMessage, message_from_json
from nbagent.log.vocabulary import Target

TARGETS: tuple[Target, Target] = (NEXT_TURN, NEXT_STEP)


class InboxState(NamedTuple):
    """Both queues at one point of the log."""

    next_turn: tuple[UserMessage, ...] = ()
    next_step: tuple[UserMessage, ...] = ()

    def queue(self, target: str) -> tuple[UserMessage, ...]:
        return self.next_turn if target == NEXT_TURN else self.next_step

    def with_queue(self, target: str, items: tuple[UserMessage, ...]) -> InboxState:
        if target == NEXT_TURN:
            return InboxState(items, self.next_step)
        return InboxState(self.next_turn, items)

    @property
    def pending(self) -> int:
        return len(self.next_turn) + len(self.next_step)

    def find(self, message_id: str) -> tuple[Target, int] | None:
        """Where ``message_id`` is pending (``next-turn`` searched first)."""
        for target in TARGETS:
            for i, m in enumerate(self.queue(target)):
                if m.id == message_id:
                    return target, i
        return None


class PlannedSplice(NamedTuple):
    """A planned inbox mutation: its event record, what it removed, and the state after it."""

    event: Splice
    removed: tuple[UserMessage, ...]
    inserted: tuple[UserMessage, ...]
    after: InboxState


def _check_target(target: str) -> None:
    if target not in TARGETS:
        raise ValueError(f"inbox target must be 'next-turn' or 'next-step', got {target!r}")


def normalize(length: int, start: int, delete_count: int | None) -> tuple[int, int]:
    """``Array.prototype.splice`` coordinates: negative ``start`` counts from the end, both clamped."""
    start = int(start)
    start = max(length + start, 0) if start < 0 else min(start, length)
    count = length - start if delete_count is None else int(delete_count)
    return start, min(max(count, 0), length - start)


def plan_splice(
    state: InboxState,
    target: str,
    start: int,
    delete_count: int | None,
    inserted: Iterable[UserMessage],
    *,
    claim: bool = False,
    fresh: bool = False,
) -> PlannedSplice | None:
    """Validate a mutation against ``state``; ``None`` when it neither removes nor inserts.

    Raises ``ValueError`` for a message id that would be pending twice after the mutation. With
    ``fresh`` (one inserted message whose id nbagent drew for this call), that check is skipped: no
    pending message can hold the id, and the check reads every pending message.
    """
    _check_target(target)
    queue = state.queue(target)
    start, count = normalize(len(queue), start, delete_count)
    inserted = tuple(inserted)
    if not count and not inserted:
        return None
    removed = queue[start : start + count]
    after = state.with_queue(target, queue[:start] + inserted + queue[start + count :])
    if inserted and not (fresh and len(inserted) == 1):
        new = {m.id for m in inserted}
        pending_new = sum(1 for q in (after.next_turn, after.next_step) for m in q if m.id in new)
        if len(new) != len(inserted) or pending_new != len(inserted):
            ids = [m.id for m in after.next_turn + after.next_step]
            dup = next(m.id for m in inserted if ids.count(m.id) > 1)
            raise ValueError(f"message {dup} is already pending; a message id can be pending only once")
    event = Splice(target, start, inserted, count, "canceled" if count and not claim else None)  # type: ignore[arg-type]
    return PlannedSplice(event, removed, inserted, after)


def replay_splice(state: InboxState, data: Mapping[str, Any], seq: int) -> InboxState:
    """Apply a stored splice; an impossible one is corruption naming ``seq``."""
    try:
        target = data["target"]
        _check_target(target)
        queue = state.queue(target)
        start = data["start"]
        count = data.get("removed_count", 0)
        if not (0 <= start <= len(queue)) or count < 0 or start + count > len(queue):
            raise ValueError(f"start {start} / removed {count} outside a queue of {len(queue)}")
        # a splice inserts only user messages (``Splice.inserted``); the stored JSON is trusted
        inserted = cast(
            "tuple[UserMessage, ...]", tuple(message_from_json(m) for m in data.get("inserted", ()))
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SessionCorruptError(f"invalid persisted inbox splice at session seq {seq}: {exc}") from None
    return state.with_queue(target, queue[:start] + inserted + queue[start + count :])


def replay_raw(queues: dict[str, list[Any]], data: Mapping[str, Any], seq: int) -> None:
    """Apply a stored splice to ``queues`` of stored message dicts (no message objects built).

    The full read of a long log replays every splice this way; an impossible splice or a
    malformed message is corruption naming ``seq``, as in :func:`replay_splice`.
    """
    try:
        queue = queues[data["target"]]
        start = data["start"]
        count = data.get("removed_count", 0)
        inserted = data.get("inserted", ())
        if type(start) is not int or type(count) is not int:
            raise TypeError("start and removed_count must be integers")
        if not (0 <= start <= len(queue)) or count < 0 or start + count > len(queue):
            raise ValueError(f"start {start} / removed {count} outside a queue of {len(queue)}")
        for m in inserted:
            if type(m.get("id")) is not str or type(m.get("content")) is not list or "source" not in m:
                raise ValueError("an inserted message without id, content or source")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SessionCorruptError(f"invalid persisted inbox splice at session seq {seq}: {exc!r}") from None
    queue[start : start + count] = inserted


SplicePlan = Callable[[InboxState], Sequence["PlannedSplice | None"]]
"""Plans splices against the staged inbox (``None`` entries change nothing)."""


class InboxOwner(Protocol):
    """What :class:`Inbox` needs from the driver that records its changes."""

    @property
    def committed_inbox(self) -> InboxState: ...

    def accept(self, message: UserMessage | str) -> UserMessage: ...

    def mutate(self, plan: SplicePlan, *, checked: bool = False) -> list[PlannedSplice]: ...

    def clear(self) -> int: ...


class Inbox:
    """``agent.inbox``: the pending queues (committed state) and the mutation operations."""

    __slots__ = ("_driver",)

    def __init__(self, driver: InboxOwner) -> None:
        self._driver = driver

    @property
    def next_turn(self) -> tuple[UserMessage, ...]:
        return self._driver.committed_inbox.next_turn

    @property
    def next_step(self) -> tuple[UserMessage, ...]:
        return self._driver.committed_inbox.next_step

    @property
    def has_pending(self) -> bool:
        return self._driver.committed_inbox.pending > 0

    def append(self, target: Target, message: UserMessage | str) -> UserMessage:
        """Insert at the end of ``target``; returns the recorded message."""
        return self._one(target, lambda q: len(q), 0, message)

    def prepend(self, target: Target, message: UserMessage | str) -> UserMessage:
        """Insert at the front of ``target``; returns the recorded message."""
        return self._one(target, lambda q: 0, 0, message)

    def _one(
        self,
        target: Target,
        where: Callable[[tuple[UserMessage, ...]], int],
        count: int,
        m: UserMessage | str,
    ) -> UserMessage:
        _check_target(target)
        msg = self._driver.accept(m)
        self._driver.mutate(lambda s: [plan_splice(s, target, where(s.queue(target)), count, (msg,))])
        return msg

    def replace(self, message_id: str, message: UserMessage | str) -> bool:
        """Replace the pending message ``message_id`` in place; ``False`` if it is not pending."""
        msg = self._driver.accept(message)

        def plan(s: InboxState) -> list[PlannedSplice | None]:
            found = s.find(message_id)
            return [] if found is None else [plan_splice(s, found[0], found[1], 1, (msg,))]

        return len(self._driver.mutate(plan)) > 0

    def remove(self, message_id: str) -> bool:
        """Cancel the pending message ``message_id``; ``False`` if it is not pending."""

        def plan(s: InboxState) -> list[PlannedSplice | None]:
            found = s.find(message_id)
            return [] if found is None else [plan_splice(s, found[0], found[1], 1, ())]

        return len(self._driver.mutate(plan)) > 0

    def move(self, message_id: str, target: Target, index: int) -> bool:
        """Move the pending ``message_id`` to ``index`` of ``target`` (splice coordinates, counted
        after its removal); ``False`` if it is not pending. One commit of two splices: a removal
        with ``outcome="moved"`` and an insertion (SPEC §11.1). Does not wake the driver."""
        _check_target(target)

        def plan(s: InboxState) -> list[PlannedSplice | None]:
            found = s.find(message_id)
            if found is None:
                return []
            out = plan_splice(s, found[0], found[1], 1, ())
            assert out is not None
            moved = out._replace(event=replace(out.event, outcome="moved"), removed=())
            return [moved, plan_splice(out.after, target, index, 0, out.removed)]

        return len(self._driver.mutate(plan)) > 0

    def clear(self) -> int:
        """Cancel everything pending, ``next-step`` first; returns how many messages were removed."""
        return self._driver.clear()

    def splice(
        self,
        target: Target,
        start: int,
        delete_count: int | None = None,
        inserted: Iterable[UserMessage] = (),
    ) -> tuple[UserMessage, ...]:
        """List-splice ``target``; returns the removed messages."""
        _check_target(target)
        msgs = tuple(self._driver.accept(m) for m in inserted)
        splices = self._driver.mutate(lambda s: [plan_splice(s, target, start, delete_count, msgs)])
        return splices[0].removed if splices else ()

    def __repr__(self) -> str:
        return f"Inbox(next_turn={len(self.next_turn)}, next_step={len(self.next_step)})"
