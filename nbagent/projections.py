"""In-memory projections of the log kept by a live agent: the event list and the model history.

Both grow incrementally as events commit. After a resume, the part of the log written before it
is read lazily from the file on first use, so a long session is ready for deliveries at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from nbagent._json import gc_paused
from nbagent.events import ASSISTANT_MESSAGE, MESSAGE_EVENTS, Event
from nbagent.messages import Message, message_from_json

Loader = Callable[[], list[Event]]


def history_message(event: Event) -> Message | None:
    """The model-visible message an event contributes, if any (SPEC §4)."""
    if event.type not in MESSAGE_EVENTS:
        return None
    data = event.data.get("message") if event.type != "user/message" else event.data
    if event.type == ASSISTANT_MESSAGE and not data.get("content"):
        return None
    return message_from_json(data)


class EventList:
    """``agent.events``: committed events, with an optional lazily loaded prefix."""

    def __init__(self, base: int = 0, loader: Loader | None = None) -> None:
        self._base = base
        self._loader = loader
        self._prefix: list[Event] | None = None if base else []
        self._items: list[Event] = []
        self._cache: tuple[Event, ...] | None = None

    def extend(self, events: Iterable[Event]) -> None:
        self._items.extend(events)
        self._cache = None

    def __len__(self) -> int:
        return self._base + len(self._items)

    def _load(self) -> list[Event]:
        if self._prefix is None:
            self._prefix = self._loader() if self._loader else []
        return self._prefix

    @property
    def prefix_loaded(self) -> bool:
        return self._prefix is not None

    def prefix(self) -> list[Event]:
        """The events written before this agent started (loaded on first use)."""
        return self._load()

    def all(self) -> tuple[Event, ...]:
        if self._cache is None:
            self._cache = tuple(self._load()) + tuple(self._items)
        return self._cache

    def since(self, seq: int) -> list[Event]:
        """Events with ``seq >= seq`` (loads the prefix only if ``seq`` reaches into it)."""
        if seq >= self._base:
            return self._items[seq - self._base :]
        return list(self.all()[seq:])


class History:
    """The derived model history, maintained incrementally (tuple snapshots for requests)."""

    def __init__(self, loader: Callable[[], list[Message]] | None = None) -> None:
        self._loader = loader
        self._prefix: list[Message] | None = None if loader else []
        self._items: list[Message] = []
        self._snapshot: tuple[Message, ...] | None = None

    def add(self, events: Sequence[Event], attachments: Sequence[Any]) -> None:
        for event, attached in zip(events, attachments):
            if event.type in MESSAGE_EVENTS:
                message = attached if isinstance(attached, Message) else history_message(event)
                if message is not None and (event.type != ASSISTANT_MESSAGE or message.content):
                    self._items.append(message)
                    self._snapshot = None

    def snapshot(self) -> tuple[Message, ...]:
        if self._snapshot is None:
            if self._prefix is None:
                self._prefix = self._loader() if self._loader else []
            self._snapshot = tuple(self._prefix) + tuple(self._items)
        return self._snapshot


def derive_history(events: Iterable[Event]) -> tuple[Message, ...]:
    """The model-visible history of a log: ``user/message``, non-empty ``assistant/message``, ``tool/result``."""
    out = []
    with gc_paused():
        for event in events:
            message = history_message(event)
            if message is not None:
                out.append(message)
    return tuple(out)
