"""Column statistics as narwhals expressions chosen by dtype, computed in one ``select`` per frame.

A frame's statistics are one ``select`` (the library evaluates them in vectorised passes). When it
fails, each column is tried on its own, and within a failing column each statistic, so one statistic
that a column's values cannot support (the distinct count of lists, say) costs only itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nbagent.context._text import clip, is_null

Stat = Callable[[Any], Any]
"""A statistic: from ``nw.col(key)`` to an expression that aggregates to one value."""
REASON_CHARS = 120


@dataclass(frozen=True)
class Failure:
    """A statistic that could not be computed, and why."""

    reason: str


def failure(exc: BaseException) -> Failure:
    return Failure(clip(f"{type(exc).__name__}: {exc}".split("\n", 1)[0], REASON_CHARS))


def exact_stats(dtype: Any) -> dict[str, Stat]:
    """Statistics cheap enough to compute over every row: null count; numeric min, max, mean, std
    (for floats over the finite values, with the infinities and NaNs counted); temporal min and max."""
    import narwhals.stable.v2 as nw

    stats: dict[str, Stat] = {"nulls": lambda c: c.null_count()}
    if dtype.is_numeric():  # Boolean is not numeric in narwhals
        stats["min"] = lambda c: c.min()
        stats["max"] = lambda c: c.max()
        if dtype.is_float():
            # Over finite values: one inf makes the mean inf (two of opposite sign, NaN) and the std NaN.
            stats["mean"] = lambda c: nw.when(c.is_finite()).then(c).mean()
            stats["std"] = lambda c: nw.when(c.is_finite()).then(c).std()
            stats["infinite"] = lambda c: (c.abs() == float("inf")).sum()
            stats["nan"] = lambda c: (c.is_nan() & ~c.is_null()).sum()  # pandas' NaN is null already
        else:
            stats["mean"] = lambda c: c.mean()
            stats["std"] = lambda c: c.std()
    elif dtype.is_temporal():
        stats["min"] = lambda c: c.min()
        stats["max"] = lambda c: c.max()
    return stats


def sampled_stats(sampled: bool) -> dict[str, Stat]:
    """Statistics that cost a hash of every value, computed on the sample of a long frame: the
    distinct non-null values and (on a sample) how many non-null values the sample holds."""
    stats: dict[str, Stat] = {"distinct": lambda c: c.drop_nulls().n_unique()}
    if sampled:
        stats["count"] = lambda c: c.count()
    return stats


def select_stats(frame: Any, plans: Mapping[str, Mapping[str, Stat]]) -> dict[str, dict[str, Any]]:
    """``{key: {stat: value or Failure}}`` for narwhals ``frame``: one ``select`` of every column's
    statistics, else one per column, else one per statistic. Null and NaN results become None."""
    import narwhals.stable.v2 as nw

    exprs = {key: {stat: make(nw.col(key)) for stat, make in stats.items()} for key, stats in plans.items()}
    aliased = {f"{i}:{stat}": (key, stat) for i, key in enumerate(exprs) for stat in exprs[key]}
    named = {alias: exprs[key][stat] for alias, (key, stat) in aliased.items()}
    try:
        row = _one_row(frame, named)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # polars panics derive from BaseException
        return {key: _column(frame, key, column) for key, column in exprs.items()}
    out: dict[str, dict[str, Any]] = {key: {} for key in exprs}
    for alias, value in row.items():
        key, stat = aliased[alias]
        out[key][stat] = value
    return out


def _column(frame: Any, key: str, exprs: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return _one_row(frame, {stat: expr for stat, expr in exprs.items()})
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:
        pass
    out: dict[str, Any] = {}
    for stat, expr in exprs.items():
        try:
            out[stat] = _one_row(frame, {stat: expr})[stat]
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            out[stat] = failure(exc)
    return out


def _one_row(frame: Any, named: Mapping[str, Any]) -> dict[str, Any]:
    if not named:
        return {}
    (row,) = frame.select(**named).rows(named=True)
    return {name: _plain(value) for name, value in row.items()}


def _plain(value: Any) -> Any:
    if is_null(value):
        return None
    try:
        if value != value:  # NaN, whatever its type
            return None
    except Exception:  # values such as arrays do not compare to a single truth value
        pass
    return value
