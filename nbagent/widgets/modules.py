"""The ES module each widget runs, as the extension's toolchain built it.

The widgets' sources are ``labextension/src/widgets/`` (``timeline.js``, ``inbox.js``,
``approval.js``, ``diff.js``), which import the one painter (``painter.js``, with the "What if…"
editor ``whatif_editor.js``) with plain ES imports, as the JupyterLab extension does.
``labextension/widgets.config.mjs`` bundles each into one self-contained ES module (anywidget's
``_esm`` is one module, with nothing beside it to import) in ``nbagent/widgets/static/``:
``jlpm build`` and ``jlpm build:prod`` in ``labextension/`` build them, and so does ``pip install``
(the build hook runs ``jlpm build:prod``); wheels ship them.

Every module starts with :data:`MARK`: the lab extension leaves a model whose ``_esm`` starts so out
of the widget state it saves (``NBAGENT_MODULE`` in ``labextension/src/savedstate.ts``), so a
notebook nbagent wrote carries no widget code (each nbagent output paints without it).

A widget reads its module when it is first made, not when this package is imported, so what needs
no live widget (the approval prompt's static HTML, the "What if…" handlers) works without a build.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import traitlets

MARK = "// nbagent widget module"
"""How every built module starts (``NBAGENT_MODULE`` in savedstate.ts; the rest of its first line
names the build)."""
BUILD = "cd labextension && jlpm build"
"""The one command that builds the modules in a checkout (``jlpm install`` there first, once)."""
SOURCES = Path(__file__).resolve().parents[2] / "labextension"
"""The checkout's extension, when this package runs from one (an installed wheel has none)."""


class ModuleMissing(RuntimeError):
    """A widget module that is not built, or older than what it is built from: build it."""


def _newest_input() -> tuple[float, Path] | None:
    """The newest file the modules are built from (the widgets' and the painter's ES sources, the
    build's configuration), when this is a checkout."""
    files = [*(SOURCES / "src" / "widgets").glob("*.js"), SOURCES / "widgets.config.mjs"]
    return max(((f.stat().st_mtime, f) for f in files if f.is_file()), default=None)


@cache
def widget_module(name: str) -> str:
    """The built module of the widget ``name`` (``"timeline"``, ``"inbox"``, ``"approval"``, ``"diff"``),
    read once per process.

    Raises :class:`ModuleMissing`, saying the command that builds it, when the module is not built,
    or when this runs from a checkout whose widget sources (or painter) changed after the build."""
    built = resources.files("nbagent.widgets").joinpath("static").joinpath(f"{name}.js")
    if not built.is_file():
        raise ModuleMissing(
            f"nbagent's {name} widget module is not built (nbagent/widgets/static/{name}.js is missing): "
            f"run `{BUILD}` (pip install builds it too)"
        )
    newest = _newest_input()
    if newest is not None and isinstance(built, Path) and built.stat().st_mtime < newest[0]:
        raise ModuleMissing(
            f"nbagent's {name} widget module (nbagent/widgets/static/{name}.js) is older than "
            f"{newest[1].relative_to(SOURCES.parent).as_posix()}: run `{BUILD}` to rebuild it"
        )
    text = built.read_text(encoding="utf-8")
    if not text.startswith(MARK):
        raise ModuleMissing(f"nbagent/widgets/static/{name}.js was not built by `{BUILD}` (no {MARK!r} line)")
    return text


class WidgetModule(traitlets.Unicode):
    """A widget's ``_esm`` (anywidget's synced module source): the built module of ``name``, read
    when the first widget of its class is made."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.module_name = name
        self.tag(sync=True)

    def default(self, obj: Any = None) -> str:
        return widget_module(self.module_name)
