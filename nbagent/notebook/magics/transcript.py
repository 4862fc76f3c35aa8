"""``%agent transcript``: the session as Markdown, rendered by :mod:`nbagent.views.markdown`."""

from __future__ import annotations

from collections.abc import Iterable

from nbagent.log.events import Event
from nbagent.views.markdown import transcript

__all__ = ["transcript", "transcript_output"]


def transcript_output(events: Iterable[Event], *, title: str) -> dict[str, str]:
    """The output of ``%agent transcript``: escaped Markdown (the session's text is data, shown as
    written, never as markup) and the same transcript unescaped as ``text/plain``."""
    events = list(events)
    return {
        "text/markdown": transcript(events, title=title),
        "text/plain": transcript(events, title=title, escape=False),
    }
