"""The ES module each widget runs: the shared painter (``painter.js``) put in front of the widget's
own file.

anywidget's ``_esm`` is one module, and the widget files have no bundler, so each widget file
imports the painter with exactly one line, ``import { a, b as c } from "./painter.js";`` (valid ES,
so the file reads and lints as the module it is), and :func:`widget_module` replaces that line with
the painter's text wrapped in a function scope (its ``export`` keywords dropped, the names it
exports returned) and a destructuring of the names the widget imported. The painter's private
helpers stay out of the widget's scope, so neither file can shadow the other. The JupyterLab
extension imports the same ``painter.js`` through webpack (``labextension/src/paint.ts``).

Every module starts with :data:`MARK`: the lab extension leaves a model whose ``_esm`` starts so out
of the widget state it saves (``labextension/src/savedstate.ts``), so a notebook nbagent wrote
carries no widget code (each nbagent output paints without it).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
PAINTER = HERE / "painter.js"
MARK = "// nbagent widget module (nbagent/widgets/modules.py)\n"
"""The first line of every module :func:`widget_module` makes (``NBAGENT_MODULE`` in savedstate.ts)."""
PARTS = (HERE / "whatif_editor.js",)
"""Shared files painted with the painter's own helpers: each imports them from ``./painter.js`` in one
line (so webpack and a linter read it as the module it is); a widget module holds them after the
painter, in its scope, and a widget imports their names from ``./painter.js`` like the painter's."""
IMPORT = re.compile(r'^import \{([^}]*)\} from "\./painter\.js";\n', re.MULTILINE)
ANY_IMPORT = re.compile(r"^\s*import\b", re.MULTILINE)
EXPORT = re.compile(r"^export (?=(?:async )?function |const |let |class )", re.MULTILINE)
EXPORTED = re.compile(r"^export (?:async )?(?:function|const|let|class) ([A-Za-z_$][\w$]*)", re.MULTILINE)


class ModuleError(ValueError):
    """A widget file the assembler cannot put together with the painter."""


def painter_scope(painter: str) -> tuple[str, list[str]]:
    """The painter's text as one expression evaluating to an object of its exports, and their names."""
    if ANY_IMPORT.search(painter):
        raise ModuleError("painter.js must not import anything: it is inlined into every widget module")
    names = EXPORTED.findall(painter)
    body = EXPORT.sub("", painter)
    return f"(() => {{\n{body}\nreturn {{ {', '.join(names)} }};\n}})()", names


def _destructure(spec: str, names: list[str], widget: str) -> str:
    parts = []
    for entry in (p.strip() for p in spec.split(",")):
        if not entry:
            continue
        name, _, alias = (w.strip() for w in entry.partition(" as "))
        if name not in names:
            raise ModuleError(f"{widget} imports {name!r}, which painter.js does not export")
        parts.append(f"{name}: {alias}" if alias else name)
    return ", ".join(parts)


def assemble(widget: str, source: str, painter: str) -> str:
    """``source`` (the widget file named ``widget``) with its painter import replaced by the painter."""
    found = IMPORT.findall(source)
    if len(found) != 1:
        raise ModuleError(
            f'{widget} must import the painter with exactly one line `import {{ … }} from "./painter.js";` '
            f"(found {len(found)})"
        )
    rest = IMPORT.sub("", source, count=1)
    if ANY_IMPORT.search(rest):
        raise ModuleError(f"{widget} imports something besides ./painter.js: widget modules have no bundler")
    scope, names = painter_scope(painter)
    header = (
        f"// ---- painter.js (nbagent/widgets/painter.js), inlined by nbagent/widgets/modules.py ----\n"
        f"const {{ {_destructure(found[0], names, widget)} }} = {scope};\n"
        f"// ---- {widget} ----\n"
    )
    return IMPORT.sub(lambda _m: header, source, count=1)


def painter_text() -> str:
    """painter.js followed by each of :data:`PARTS` without its painter import line."""
    parts = [PAINTER.read_text(encoding="utf-8")]
    for part in PARTS:
        text = part.read_text(encoding="utf-8")
        if len(IMPORT.findall(text)) > 1:
            raise ModuleError(f"{part.name} imports the painter in more than one line")
        parts.append(IMPORT.sub("", text, count=1))
    return "\n".join(parts)


@cache
def widget_module(name: str) -> str:
    """The module anywidget sends for the widget file ``name`` (read once per process), marked."""
    return MARK + assemble(name, (HERE / name).read_text(encoding="utf-8"), painter_text())
