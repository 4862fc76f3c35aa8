"""The one spelling of sizes in everything nbagent shows: SI units (``812 B``, ``4.1 kB``, ``2.3 MB``)."""

from __future__ import annotations


def format_size(n: float) -> str:
    """``812 B``, ``4.1 kB``, ``2.3 MB``, ``1.2 GB``."""
    if n < 1000:
        return f"{n:.0f} B"
    for unit in ("kB", "MB", "GB"):
        n /= 1000
        if n < 1000 or unit == "GB":
            return f"{n:.1f} {unit}"
    raise AssertionError("unreachable")
