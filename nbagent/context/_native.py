"""Which DataFrame library a value belongs to, asked of ``narwhals.dependencies``.

Nothing is imported while neither pandas nor polars is: no frame of theirs can exist before its
library is loaded, and ``is_dataframe`` runs on every ``%inject``.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

Library = Literal["pandas", "polars"]
Shape = Literal["DataFrame", "Series", "LazyFrame"]


def native_kind(obj: Any) -> tuple[Library, Shape] | None:
    """``(library, shape)`` for pandas and polars DataFrames and Series and polars LazyFrames
    (subclasses included), else None."""
    if "pandas" not in sys.modules and "polars" not in sys.modules:
        return None
    try:
        from narwhals import dependencies as deps
    except ImportError:  # the summary then says how to install it; recognising frames still works
        return _by_module(obj)
    if deps.is_pandas_dataframe(obj):
        return "pandas", "DataFrame"
    if deps.is_pandas_series(obj):
        return "pandas", "Series"
    if deps.is_polars_dataframe(obj):
        return "polars", "DataFrame"
    if deps.is_polars_series(obj):
        return "polars", "Series"
    if deps.is_polars_lazyframe(obj):
        return "polars", "LazyFrame"
    return None


def _by_module(obj: Any) -> tuple[Library, Shape] | None:
    for cls in type(obj).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in ("pandas", "polars") and cls.__name__ in ("DataFrame", "Series", "LazyFrame"):
            if cls.__name__ == "LazyFrame" and root == "pandas":
                continue
            return root, cls.__name__  # type: ignore[return-value]
    return None


def type_name(obj: Any) -> str:
    """``pandas.DataFrame``-style name: the top-level package and the class."""
    cls = type(obj)
    return f"{cls.__module__.partition('.')[0]}.{cls.__qualname__}"
