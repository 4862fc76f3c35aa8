"""In-memory projections of the log kept by a live agent: the event list and the model history.

Both grow incrementally as events commit. After a resume, the part of the log written before it
is read lazily from the file on first use, so a long session is ready for deliveries at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import cast

from nbagent._json import gc_paused
from nbagent.log.events import (
    MESSAGE_EVENTS,
    AssistantMessageEvent,
    Event,
    Record,
    ToolResultEvent,
    UserMessageEvent,
    parse_event,
)
from nbagent.log.messages import Message


def record_message(record: Record) -> Message | None:
    """The model-visible message a record contributes, if any (SPEC §4)."""
    kind = type(record)  # exact-type checks (fast, and mypy does not narrow through ``kind``)
    if kind is UserMessageEvent or kind is ToolResultEvent:
        return cast("UserMessageEvent | ToolResultEvent", record).message
    if kind is AssistantMessageEvent:
        message = cast(AssistantMessageEvent, record).message
        if message.content:
            return message
    return None


Prefix = tuple[list[Event], list[Message]]
"""A resumed session's events before the resume and the history they derive, read and validated."""


class Projections:
    """``agent.events`` and the model history, grown incrementally as events commit.

    After a resume, the part of the log written before it is read (and validated) by ``loader``
    on first use, so a long session is ready for deliveries at once.
    """

    def __init__(self, base: int = 0, loader: Callable[[], Prefix] | None = None) -> None:
        self._base = base
        self._loader = loader if base else None
        self._prefix: list[Event] | None = None if self._loader else []
        self._prefix_history: list[Message] = []
        self._items: list[Event] = []
        self._history: list[Message] = []
        self._events_cache: tuple[Event, ...] | None = None
        self._history_cache: tuple[Message, ...] | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the prefix written before a resume has been read (always, for a new session)."""
        return self._prefix is not None

    def materialise(self) -> None:
        """Read and validate the prefix now (raises ``SessionCorruptError`` on damage)."""
        if self._prefix is not None:
            return
        with self._lock:
            if self._prefix is None and self._loader is not None:
                events, history = self._loader()
                self._prefix_history = history
                self._prefix = events
                self._events_cache = self._history_cache = None

    def add(self, events: Sequence[Event], records: Sequence[Record]) -> None:
        """Record committed events (and the messages the history gains from their records)."""
        self._items.extend(events)
        self._events_cache = None
        for event, record in zip(events, records):
            if event.type in MESSAGE_EVENTS:
                message = record_message(record)
                if message is not None:
                    self._history.append(message)
                    self._history_cache = None

    def __len__(self) -> int:
        return self._base + len(self._items)

    def events(self) -> tuple[Event, ...]:
        if self._events_cache is None:
            self.materialise()
            assert self._prefix is not None
            self._events_cache = tuple(self._prefix) + tuple(self._items)
        return self._events_cache

    def since(self, seq: int) -> list[Event]:
        """Events with ``seq >= seq`` (reads the prefix only if ``seq`` reaches into it)."""
        if seq >= self._base:
            return self._items[seq - self._base :]
        return list(self.events()[seq:])

    def history_since(self, start: int) -> tuple[int, list[Message]]:
        """The history's length and its messages from index ``start`` on (no full snapshot is made:
        the meter reads only what is new since its last count)."""
        self.materialise()
        prefix = self._prefix_history
        if start >= len(prefix):
            return len(prefix) + len(self._history), self._history[start - len(prefix) :]
        return len(prefix) + len(self._history), prefix[start:] + self._history

    def history(self) -> tuple[Message, ...]:
        """The derived model history (a tuple snapshot, as requests carry it)."""
        if self._history_cache is None:
            self.materialise()
            self._history_cache = tuple(self._prefix_history) + tuple(self._history)
        return self._history_cache


def derive_history(events: Iterable[Event]) -> tuple[Message, ...]:
    """The model-visible history of a log: ``user/message``, non-empty ``assistant/message``, ``tool/result``."""
    out = []
    with gc_paused():
        for event in events:
            if event.type in MESSAGE_EVENTS:
                message = record_message(parse_event(event))
                if message is not None:
                    out.append(message)
    return tuple(out)
