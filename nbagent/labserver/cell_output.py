"""A turn as a live cell shows it, for the lab extension to put in the cell after a kernel restart.

``timeline?file=F&turn=N&output=cell&headline=H`` answers the MIME bundle a live cell's output holds
(``application/vnd.nbagent.timeline+json``, ``text/html``, ``text/plain``) for turn ``N`` as the log
has it, with ``H`` (the cell's own headline, cut to ``MAX_HEADLINE``) as its headline: the same HTML
and text the kernel makes, so a saved notebook shows the turn's end in viewers without the extension
too. ``H`` is data from the notebook and reaches the HTML only through the one escaping function.
"""

from __future__ import annotations

from typing import Any

from nbagent.views import TIMELINE_MIME
from nbagent.views.html import live_turn_html
from nbagent.views.plain import live_turn_text
from nbagent.views.text import clip

MAX_HEADLINE = 300
"""Characters of a cell's headline kept (a live headline is about 100)."""


def cell_output(bundle: dict[str, Any], headline: str | None) -> dict[str, Any]:
    """The live cell's MIME bundle of a one-turn ``bundle``, headed ``headline``."""
    bundle = {**bundle, "headline": None if headline is None else clip(headline, MAX_HEADLINE)}
    return {TIMELINE_MIME: bundle, "text/html": live_turn_html(bundle), "text/plain": live_turn_text(bundle)}
