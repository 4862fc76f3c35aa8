"""Live inbox and timeline widgets for an agent (anywidget), with static HTML snapshots.

``show(agent)`` displays both; ``%agent show`` calls it. The timeline is a projection of the log
(:mod:`nbagent.widgets.timeline`); the front-end code is plain ES modules shipped beside this file.
"""

from __future__ import annotations

from nbagent.agent import Agent
from nbagent.widgets._widgets import InboxWidget, TimelineWidget

__all__ = ["InboxWidget", "TimelineWidget", "show"]


def show(agent: Agent) -> tuple[InboxWidget, TimelineWidget]:
    """Display the inbox and the timeline of ``agent`` in the current output; returns both widgets."""
    from IPython.display import display

    inbox, timeline = InboxWidget(agent), TimelineWidget(agent)
    display(inbox, timeline)
    return inbox, timeline
