"""Which DataFrame library a value belongs to, asked of ``narwhals.dependencies``.

Nothing is imported while no frame library is: no frame of theirs can exist before its library is
loaded, and ``is_dataframe`` runs on every ``%inject`` and every ``list_variables``.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

Library = Literal["pandas", "polars", "modin", "cudf", "pyarrow", "dask", "duckdb", "ibis"]
Shape = Literal["DataFrame", "Series", "LazyFrame", "RecordBatch"]

LIBRARIES: tuple[str, ...] = ("pandas", "polars", "modin", "cudf", "pyarrow", "dask", "duckdb", "ibis")
"""The top-level modules whose frames are recognised."""
PANDAS_LIKE = ("pandas", "modin", "cudf")
"""Libraries with pandas' API (an index, ``memory_usage``, ``set_axis``)."""
LAZY = ("dask", "duckdb", "ibis")
"""Libraries whose every frame is lazy: summarising its rows would run its query (or graph)."""


def native_kind(obj: Any) -> tuple[Library, Shape] | None:
    """``(library, shape)`` for a frame nbagent summarises (subclasses included), else None:
    pandas, modin and cuDF DataFrames and Series, polars DataFrames, Series and LazyFrames, pyarrow
    Tables (``DataFrame``) and RecordBatches, Dask DataFrames and Series, DuckDB relations and Ibis
    tables (each a ``LazyFrame``, or a Dask ``Series``)."""
    if not any(lib in sys.modules for lib in LIBRARIES):
        return None
    try:
        from narwhals import dependencies as deps
    except ImportError:  # the summary then says how to install it; recognising frames still works
        return _by_module(obj)
    checks: tuple[tuple[Any, Library, Shape], ...] = (
        (deps.is_pandas_dataframe, "pandas", "DataFrame"),
        (deps.is_pandas_series, "pandas", "Series"),
        (deps.is_polars_dataframe, "polars", "DataFrame"),
        (deps.is_polars_series, "polars", "Series"),
        (deps.is_polars_lazyframe, "polars", "LazyFrame"),
        (deps.is_pyarrow_table, "pyarrow", "DataFrame"),
        (_is_record_batch, "pyarrow", "RecordBatch"),
        (deps.is_modin_dataframe, "modin", "DataFrame"),
        (deps.is_modin_series, "modin", "Series"),
        (deps.is_cudf_dataframe, "cudf", "DataFrame"),
        (deps.is_cudf_series, "cudf", "Series"),
        (deps.is_dask_dataframe, "dask", "LazyFrame"),
        (_is_dask_series, "dask", "Series"),
        (deps.is_duckdb_relation, "duckdb", "LazyFrame"),
        (deps.is_ibis_table, "ibis", "LazyFrame"),
    )
    for check, library, shape in checks:
        try:
            if check(obj):
                return library, shape
        except Exception:  # a library too old or too new for narwhals' check: not recognised
            continue
    return None


def is_lazy(library: str, shape: str) -> bool:
    """Whether summarising the rows of such a frame would run a query or a task graph."""
    return library in LAZY or shape == "LazyFrame"


def _is_record_batch(obj: Any) -> bool:
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(obj, pa.RecordBatch)


def _is_dask_series(obj: Any) -> bool:
    if "dask.dataframe" not in sys.modules:
        return False
    dd = sys.modules["dask.dataframe"]
    return isinstance(obj, dd.Series)


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
