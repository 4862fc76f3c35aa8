"""Context producers: values turned into sourced UserMessages for inject().

Each producer frames its own text (SPEC §2.3). Data inside a frame reaches the model as written: only
what could forge the frame's closing delimiter is escaped (``</dataframe`` becomes ``<\\/dataframe``),
and line breaks inside one-line fields are shown as ``\\n``. No HTML entities.

- ``dataframe(df, ...)``: the SPEC §9.3 summary of a DataFrame or Series of pandas, polars, pyarrow,
  modin or cuDF (or a lazy frame's schema and what it knows, never computed: polars LazyFrame, Dask,
  DuckDB, Ibis), source kind ``dataframe``, its statistics computed through narwhals in one
  ``select`` per frame, kept within a token budget by dropping detail in the fixed ``DEGRADATION_ORDER``:
  ``samples`` (per-column sample values), ``head`` (the head rows), ``top-values``, ``middle-stats``
  (full statistics kept only for the first 3 and last 2 columns), ``stats`` (every column reduced to
  dtype and null share), ``middle-columns`` (columns other than the first 10 and last 5 reduced to a
  count per dtype, after which as many of their names as fit come back), ``cut`` (the text cut at a
  line and closed). Steps are applied in that order until the text fits; then any earlier step the
  later ones made unnecessary is undone, so ``source["truncated"]`` lists, in that order, exactly
  the steps the summary needed.
- ``variable(obj, name)``: a budgeted preview of any other object, source kind ``variable``: a string
  as written, the ``repr``, or ``str()``/``_repr_markdown_`` where the ``repr`` says nothing; a dict
  or list of frames one line per frame; ``source["cut"]`` says what was left out.
- ``error(ename, evalue, traceback)``: an ANSI-stripped traceback keeping its tail, source kind ``error``.
- ``cell_text(text)``: literal context text, verbatim, source kind ``cell``.
- ``session_reference(path, session_id)``: a read-once, budgeted snapshot of another session's
  direct messages, framed as untrusted background, source kind ``session-reference`` (SPEC §8).

``estimate_tokens`` is the estimate every budget here is measured with. pandas, polars and narwhals
are imported only when a frame is summarized. A frame of up to 50 rows is sent as a table (columns
cut to fit), never summarized.
"""

from nbagent.context._native import native_kind
from nbagent.context._render import DEGRADATION_ORDER
from nbagent.context._render import MIN_BUDGET_TOKENS as DATAFRAME_MIN_BUDGET
from nbagent.context._shown import frames_line, telling_text
from nbagent.context._text import estimate_tokens
from nbagent.context.cells import cell_text
from nbagent.context.frames import dataframe, frame_outline, is_dataframe, is_lazy_frame
from nbagent.context.preview import MIN_BUDGET_TOKENS as PREVIEW_MIN_BUDGET
from nbagent.context.preview import variable
from nbagent.context.sessions import session_reference
from nbagent.context.tracebacks import error, strip_ansi

__all__ = [
    "DATAFRAME_MIN_BUDGET",
    "DEGRADATION_ORDER",
    "PREVIEW_MIN_BUDGET",
    "cell_text",
    "dataframe",
    "error",
    "estimate_tokens",
    "frame_outline",
    "frames_line",
    "is_dataframe",
    "is_lazy_frame",
    "native_kind",
    "session_reference",
    "strip_ansi",
    "telling_text",
    "variable",
]
