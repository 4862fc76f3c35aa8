"""``%agent transcript``: the session as Markdown, rendered by :mod:`nbagent.views.markdown`."""

from __future__ import annotations

from nbagent.views.markdown import transcript

__all__ = ["transcript"]
