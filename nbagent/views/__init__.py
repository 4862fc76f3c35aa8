"""Presentation: one view model of a session, painted as HTML, Markdown, text and JSON.

Pure Python over the event log: nothing here imports IPython or anywidget (the notebook layer and
the widgets paint with these). The fold is :class:`Timeline`; every display renders it.
"""

from __future__ import annotations

from nbagent.views.bundle import TIMELINE_MIME
from nbagent.views.coalesce import Coalescer
from nbagent.views.html import inbox_html, live_turn_html, stylesheet, timeline_html
from nbagent.views.inbox import inbox_item, inbox_model, inbox_text
from nbagent.views.labels import Label, describe_message
from nbagent.views.markdown import transcript, transcript_markdown
from nbagent.views.plain import live_turn_text, timeline_text
from nbagent.views.timeline import Node, Patch, Timeline, apply_patches, message_nodes, project, timeline_json
from nbagent.views.turn import TurnView

__all__ = [
    "TIMELINE_MIME",
    "Coalescer",
    "Label",
    "Node",
    "Patch",
    "Timeline",
    "TurnView",
    "apply_patches",
    "describe_message",
    "inbox_html",
    "inbox_item",
    "inbox_model",
    "inbox_text",
    "live_turn_html",
    "live_turn_text",
    "message_nodes",
    "project",
    "stylesheet",
    "timeline_html",
    "timeline_json",
    "timeline_text",
    "transcript",
    "transcript_markdown",
]
