"""Live inbox and timeline widgets for an agent (anywidget), with static HTML snapshots.

``show(agent)`` displays both; ``%agent show`` calls it. They paint the view model of
:mod:`nbagent.views`; the front-end code is plain ES modules shipped beside this file.
"""

from __future__ import annotations

from nbagent.agent import Agent
from nbagent.widgets._widgets import InboxWidget, TimelineWidget

__all__ = ["InboxWidget", "TimelineWidget", "show"]


def show(agent: Agent) -> tuple[InboxWidget, TimelineWidget]:
    """Display the inbox and the timeline of ``agent`` in the current output; returns both widgets.

    Each output carries saved views next to the live one (static HTML, the timeline JSON bundle,
    text); they are re-published as the session changes, so a saved notebook shows the session as
    it is on GitHub, nbviewer, or JupyterLab without a kernel.
    """
    from IPython.display import display

    inbox, timeline = InboxWidget(agent), TimelineWidget(agent)
    for widget in (inbox, timeline):
        widget.follow_display(display(widget, display_id=True))
    return inbox, timeline
