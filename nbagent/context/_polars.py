"""What only a polars frame has: its own memory estimate, and a lazy frame's schema."""

from __future__ import annotations

from typing import Any

from nbagent.context._text import format_bytes


def names_and_dtypes(native: Any) -> tuple[list[str], list[str]]:
    """Column names and dtype names of a DataFrame, or of a LazyFrame without running its query."""
    schema = native.collect_schema() if hasattr(native, "collect_schema") else native.schema
    return list(schema.names()), [str(d) for d in schema.dtypes()]


def memory_text(native: Any) -> str:
    try:
        return format_bytes(native.estimated_size())
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"
