"""Deep-frozen plain JSON values: validated once, detached from the caller, safe to share."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import orjson


def _refuse(self: object, *_: object, **__: object) -> None:
    """Every mutating method of a frozen container."""
    raise TypeError("nbagent message data is frozen; build a new message instead")


_F = TypeVar("_F", bound="_Frozen")


class _Frozen:
    """What both frozen containers share besides refusing mutation: a copy, shallow or deep, is the
    value itself."""

    __slots__ = ()

    def __copy__(self: _F) -> _F:
        return self

    def __deepcopy__(self: _F, memo: dict[int, Any]) -> _F:
        return self


class FrozenDict(_Frozen, dict[str, Any]):
    """A ``dict`` that refuses mutation; JSON-encodes and compares like a plain dict."""

    __slots__ = ()

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))


class FrozenList(_Frozen, list[Any]):
    """A ``list`` that refuses mutation; JSON-encodes and compares like a plain list."""

    __slots__ = ()

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


MAX_DEPTH = 200
"""How deeply plain JSON may nest (SPEC §2.1): the log's encoder and readers stay well within limits."""
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1


def _bad_str(value: str) -> int | None:
    """The index of the first lone surrogate in ``value``, or ``None`` when it is valid Unicode."""
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def check_str(value: str, where: str) -> str:
    """Return ``value`` if it holds only Unicode scalar values; else raise ``ValueError`` naming it."""
    at = _bad_str(value)
    if at is not None:
        raise ValueError(
            f"{where} holds a lone surrogate (U+{ord(value[at]):04X} at index {at}), which the log "
            "cannot store; decode bytes with errors='replace' (or pass valid text)"
        )
    return value


def _check_int(value: int, where: str) -> int:
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError(
            f"{where} is an integer outside signed 64 bits, which the log cannot store; pass it as a str"
        )
    return value


class _Bad(Exception):
    """A nested value is not storable plain JSON: ``path`` grows as the error climbs out."""

    def __init__(self, kind: type[Exception], path: str, rest: str) -> None:
        self.kind, self.path, self.rest = kind, path, rest


def freeze(value: Any, where: str = "value") -> Any:
    """Return a deep-frozen copy of plain JSON ``value``; raise ``TypeError``/``ValueError`` naming the bad path.

    Plain JSON means str (valid Unicode: no lone surrogates), int (signed 64 bits), finite float,
    bool, None, lists/tuples, and dicts with str keys, nested at most ``MAX_DEPTH`` levels.
    Lists and tuples become :class:`FrozenList`, dicts :class:`FrozenDict`: both compare equal to
    the plain values ``json.loads`` gives back, so a stored and a live event compare equal.
    """
    try:
        return _freeze(value, 1)
    except _Bad as bad:
        path = bad.path if len(bad.path) <= 80 else f"{bad.path[:40]}…{bad.path[-30:]}"
        raise bad.kind(f"{where}{path}{bad.rest}") from None


def _freeze(value: Any, depth: int) -> Any:
    cls = type(value)
    if cls is str:
        at = _bad_str(value)
        if at is None:
            return value
        raise _Bad(ValueError, "", _surrogate(value, at))
    if cls is int:
        if _INT_MIN <= value <= _INT_MAX:
            return value
        raise _Bad(
            ValueError,
            "",
            " is an integer outside signed 64 bits, which the log cannot store; pass it as a str",
        )
    if cls is bool or value is None or cls is FrozenDict or cls is FrozenList:
        return value
    if cls is float:
        if not math.isfinite(value):
            raise _Bad(TypeError, "", f" is {value!r}: only finite numbers are plain JSON")
        return value
    if isinstance(value, dict | list | tuple) and depth > MAX_DEPTH:
        raise _Bad(ValueError, "", f" nests deeper than {MAX_DEPTH} levels, which the log cannot store")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Bad(TypeError, "", f" has key {key!r} of type {type(key).__name__}; keys must be str")
            at = _bad_str(key)
            if at is not None:
                raise _Bad(ValueError, "", f" has a key that{_surrogate(key, at)}")
            out[key] = _item(item, key, depth)
        return FrozenDict(out)
    if cls is tuple or cls is list:
        return FrozenList([_item(item, i, depth) for i, item in enumerate(value)])
    for base in (str, bool, int, float):
        if isinstance(value, base):
            return _freeze(base(value), depth)
    if isinstance(value, list | tuple):
        return FrozenList([_item(item, i, depth) for i, item in enumerate(value)])
    raise _Bad(
        TypeError,
        "",
        f" is a {cls.__name__}; message content and sources must be plain JSON "
        "(str, int, finite float, bool, None, lists, dicts with str keys)",
    )


def _item(item: Any, key: object, depth: int) -> Any:
    """Freeze a nested value (fast paths for the common scalars); a failure gains ``[key]``."""
    cls = type(item)
    if cls is str:
        if item.isascii():
            return item
    elif cls is int:
        if _INT_MIN <= item <= _INT_MAX:
            return item
    elif cls is bool or item is None or cls is FrozenDict or cls is FrozenList:
        return item
    try:
        return _freeze(item, depth + 1)
    except _Bad as bad:
        bad.path = f"[{key!r}]{bad.path}"
        raise


def _surrogate(value: str, at: int) -> str:
    return (
        f" holds a lone surrogate (U+{ord(value[at]):04X} at index {at}), which the log cannot "
        "store; decode bytes with errors='replace' (or pass valid text)"
    )


def storable(value: Any, depth: int = 1) -> Any:
    """``value`` with every lone surrogate in its strings (and keys) replaced by U+FFFD.

    For text nbagent records from outside code (model output, tool results): made storable
    instead of refused (SPEC §2.1). A surrogate pair split into two code points is joined back.
    Containers deeper than ``MAX_DEPTH`` are left as they are (:func:`freeze` refuses them).
    """
    cls = type(value)
    if cls is str:
        return value if _bad_str(value) is None else fix_text(value)
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {storable(k) if isinstance(k, str) else k: storable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(v, depth + 1) for v in value]
    if isinstance(value, str):
        return storable(str(value))
    return value


def nests_deeper(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value``'s dicts, lists and tuples nest deeper than ``limit`` levels.

    Iterative, so a value nested far beyond Python's recursion limit is measured, not a crash."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return False


def fix_text(value: str) -> str:
    """Valid Unicode for ``value``: surrogate pairs joined, lone surrogates replaced by U+FFFD."""
    if _bad_str(value) is None:
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


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
