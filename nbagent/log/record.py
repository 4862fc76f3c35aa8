"""The base of every event record, the registry of record types, and :class:`UnknownEvent`.

A record class registers itself with :func:`record_type` by being defined (``nbagent.log.events``
defines the core ones); :func:`nbagent.log.events.parse_event` reads stored events through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields
from operator import attrgetter
from typing import Any, ClassVar

from nbagent._json import FrozenDict

_BY_TYPE: dict[str, type[Record]] = {}


class Record:
    """A core event: its ``type`` tag and its fields; ``seq`` and ``time`` once it is in the log.

    Each event type is a ``@dataclass(frozen=True, slots=True)`` subclass. A record being staged
    has no ``seq``/``time`` yet (the journal assigns them to the stored envelope); a record from
    :func:`parse_event` carries the envelope's. They are not fields: records compare by content.
    """

    __slots__ = ("seq", "time")
    type: ClassVar[str]
    required: ClassVar[frozenset[str] | None] = None
    """The stored keys a resumed log must have for this type (checked before it is replayed);
    ``None``: its fields without a default, those :meth:`from_json` cannot do without
    (:func:`required_keys`)."""
    seq: int
    time: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        tag = cls.__dict__.get("type")
        if isinstance(tag, str):  # the slotted class the dataclass decorator makes replaces the first
            _BY_TYPE[tag] = cls

    def to_json(self) -> Any:
        """The ``data`` the log stores for this event: by default its fields, in order."""
        names, values = _SHAPES.get(type(self)) or field_shape(type(self))
        return FrozenDict(zip(names, values(self)))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        """The record of stored ``data``, by default field by field (a field without a default is
        required: its absence raises ``KeyError``)."""
        required = _required_fields(cls)
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data or f.name in required})  # type: ignore[arg-type]


_SHAPES: dict[type[Record], tuple[tuple[str, ...], Callable[[Any], Any]]] = {}
_REQUIRED_FIELDS: dict[type[Record], frozenset[str]] = {}


def field_shape(cls: type[Record]) -> tuple[tuple[str, ...], Callable[[Any], Any]]:
    """A record class's field names in order and a getter of their values (worked out once)."""
    shape = _SHAPES.get(cls)
    if shape is None:
        names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
        getter = attrgetter(*names)
        shape = _SHAPES[cls] = (names, (lambda r: (getter(r),)) if len(names) == 1 else getter)
    return shape


def _required_fields(cls: type[Record]) -> frozenset[str]:
    required = _REQUIRED_FIELDS.get(cls)
    if required is None:
        required = _REQUIRED_FIELDS[cls] = frozenset(
            f.name
            for f in fields(cls)  # type: ignore[arg-type]
            if f.default is MISSING and f.default_factory is MISSING
        )
    return required


def required_keys(cls: type[Record]) -> frozenset[str]:
    """The stored keys a resumed log's event of record class ``cls`` must have (``cls.required``)."""
    return _required_fields(cls) if cls.required is None else cls.required


def record_type(type_: str) -> type[Record] | None:
    """The record class of a stored event type (``None`` for a type this version does not know)."""
    return _BY_TYPE.get(type_)


class EventParseError(ValueError):
    """A stored event of a known type lacks a field its record needs."""


@dataclass(frozen=True, slots=True)
class UnknownEvent(Record):
    """An event type this version does not know (kept, never an error)."""

    type: str  # type: ignore[misc]
    data: Any = None

    def to_json(self) -> Any:
        return self.data
