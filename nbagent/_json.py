"""Deep-frozen plain JSON values: validated once, detached from the caller, safe to share."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson


class FrozenDict(dict):  # type: ignore[type-arg]
    """A ``dict`` that refuses mutation; JSON-encodes and compares like a plain dict."""

    __slots__ = ()

    def _refuse(self, *_: object, **__: object) -> None:
        raise TypeError("nbagent message data is frozen; build a new message instead")

    __setitem__ = __delitem__ = _refuse  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))


class FrozenList(list):  # type: ignore[type-arg]
    """A ``list`` that refuses mutation; JSON-encodes and compares like a plain list."""

    __slots__ = ()

    def _refuse(self, *_: object, **__: object) -> None:
        raise TypeError("nbagent message data is frozen; build a new message instead")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


def freeze(value: Any, where: str = "value") -> Any:
    """Return a deep-frozen copy of plain JSON ``value``; raise ``TypeError`` naming the bad path.

    Plain JSON means str, int, finite float, bool, None, lists/tuples, and dicts with str keys.
    Lists and tuples become :class:`FrozenList`, dicts :class:`FrozenDict`: both compare equal to
    the plain values ``json.loads`` gives back, so a stored and a live event compare equal.
    """
    cls = type(value)
    if cls is str or cls is int or cls is bool or value is None:
        return value
    if cls is float:
        if not math.isfinite(value):
            raise TypeError(f"{where} is {value!r}: only finite numbers are plain JSON")
        return value
    if cls is FrozenDict or cls is FrozenList:
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError(f"{where} has key {key!r} of type {type(key).__name__}; keys must be str")
            out[key] = _freeze_item(item, where, key)
        return FrozenDict(out)
    if cls is tuple or cls is list:
        return FrozenList([_freeze_item(item, where, i) for i, item in enumerate(value)])
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return freeze(float(value), where)
    raise TypeError(
        f"{where} is a {cls.__name__}; message content and sources must be plain JSON "
        "(str, int, finite float, bool, None, lists, dicts with str keys)"
    )


def _freeze_item(item: Any, where: str, key: object) -> Any:
    """Freeze a nested value, building its path for the error message only when it fails."""
    cls = type(item)
    if cls is str or cls is int or cls is bool or item is None or cls is FrozenDict or cls is FrozenList:
        return item
    try:
        return freeze(item, "")
    except TypeError:
        pass
    return freeze(item, f"{where}[{key!r}]")


def thaw(value: Any) -> Any:
    """Return a plain, mutable copy (dicts and lists) of a frozen JSON value."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Compact JSON text (orjson: an order of magnitude faster than the stdlib on the hot path)."""
    return orjson.dumps(value).decode()


loads = orjson.loads


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while bulk-building acyclic objects (JSON rows)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
