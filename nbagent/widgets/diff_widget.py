"""``%agent diff`` live in the notebook: the turn diff's view model painted by the shared painter.

The output also carries the view model as ``application/vnd.nbagent.diff+json`` (the lab extension
paints it with the same painter, kernel or not) and the diff as text and Markdown
(``nbagent.views.diff``), for a notebook read without either.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from nbagent.views.diff import DIFF_MIME, TurnDiff, diff_json
from nbagent.views.diff_paint import diff_html, diff_markdown, diff_text
from nbagent.views.html import stylesheet
from nbagent.widgets.modules import WidgetModule


class DiffWidget(anywidget.AnyWidget):
    """Two turns, step by step: each request's messages marked same / added / removed / moved, with
    their source badges, and whether each step's answer changed."""

    _esm = WidgetModule("diff")
    _css = stylesheet()
    diff = traitlets.Dict().tag(sync=True)

    def __init__(self, d: TurnDiff, **kwargs: Any) -> None:
        self._turn_diff = d
        super().__init__(diff=diff_json(d), **kwargs)

    def __repr__(self) -> str:
        return diff_text(self._turn_diff)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        if data is None:
            return bundle
        saved = {
            DIFF_MIME: self.diff,
            "text/plain": diff_text(self._turn_diff),
            "text/markdown": diff_markdown(self._turn_diff),
            "text/html": diff_html(self._turn_diff),
        }
        return {**data, **saved}, meta
