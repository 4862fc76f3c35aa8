"""Write the TypeScript types of the view models from their Python types.

``nbagent/views/schema.py`` holds one ``TypedDict`` per node type of the timeline bundle (and the
bundle, its pending items, the inbox model, the turn diff). This script reads them by introspection
(``typing.get_type_hints``, ``__required_keys__``, ``Literal``, unions, ``list``/``dict``, nested
``TypedDict``s) and their docstrings from the source, and writes
``labextension/src/widgets/view_model.d.ts``, beside the painter: one interface per ``TypedDict``
(``I`` + its name, extending the interfaces of its bases), and a type per alias (``ViewNode``, the
union discriminated on ``type``). The output depends on the schema
alone, so the same schema gives the same file byte for byte.

    python3 scripts/gen_view_types.py           # write the file
    python3 scripts/gen_view_types.py --check   # exit 1 when the file is stale

tests/test_view_types.py runs :func:`render` and compares it with the file in the checkout.
Hand-written, on the standard library and ``typing_extensions`` (already installed with pydantic).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

import typing_extensions

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "nbagent" / "views" / "schema.py"
TARGET = ROOT / "labextension" / "src" / "widgets" / "view_model.d.ts"
COMMAND = "python3 scripts/gen_view_types.py"

HEADER = f"""\
// Generated from nbagent/views/schema.py by `{COMMAND}`: do not edit by hand.
// The types of the view models' JSON (docs/timeline-json.md), for the shared painter (painter.d.ts
// beside this file) and the JupyterLab extension. tests/test_view_types.py fails when it is stale.
"""

PRIMITIVES: dict[Any, str] = {str: "string", int: "number", float: "number", bool: "boolean"}
_NONE = type(None)


def interface_name(name: str) -> str:
    """A ``TypedDict``'s interface: ``I`` + its name (the lab extension's naming rule)."""
    return f"I{name}"


def docstrings(source: str) -> dict[str, str]:
    """Docstrings by dotted name: each class's, each field's (``Class.field``: the string after it)
    and each module-level alias's (the string after its assignment)."""
    out: dict[str, str] = {}
    tree = ast.parse(source)

    def following(body: list[ast.stmt], prefix: str) -> None:
        for stmt, after in zip(body, [*body[1:], None]):
            target = None
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                target = stmt.target.id
            elif (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                target = stmt.targets[0].id
            doc = _string(after)
            if target is not None and doc is not None:
                out[prefix + target] = doc

    following(tree.body, "")
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            doc = ast.get_docstring(node)
            if doc:
                out[node.name] = doc
            following(node.body, f"{node.name}.")
    return out


def _string(stmt: ast.stmt | None) -> str | None:
    if (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    ):
        return inspect.cleandoc(stmt.value.value)
    return None


def comment(doc: str | None, indent: str) -> list[str]:
    """A JSDoc comment of ``doc`` (reST ````code```` becomes Markdown ```code```)."""
    if not doc:
        return []
    lines = re.sub(r"``(.+?)``", r"`\1`", doc).replace("*/", "*\\/").splitlines()
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]


class Generator:
    """The declarations of one schema module, in the order the module defines them."""

    def __init__(self, module: types.ModuleType, source: str) -> None:
        self.module = module
        self.docs = docstrings(source)
        self.typeddicts: dict[str, type] = {}
        self.aliases: dict[str, Any] = {}
        self.order: list[str] = []
        for name, value in vars(module).items():
            if typing_extensions.is_typeddict(value) and value.__module__ == module.__name__:
                self.typeddicts[name] = value
                self.order.append(name)
            elif not isinstance(value, type) and _origin(value) in (typing.Union, typing.Literal):
                self.aliases[name] = value
                self.order.append(name)

    def ts(self, tp: Any, *, alias: str | None = None) -> str:
        """The TypeScript of a Python type (``alias``: the alias being defined, not named by itself)."""
        for name, value in self.aliases.items():
            if name != alias and _same(tp, value):
                return name
        if tp is Any:
            return "unknown"
        if tp is None or tp is _NONE:
            return "null"
        if tp in PRIMITIVES:
            return PRIMITIVES[tp]
        if typing_extensions.is_typeddict(tp):
            if tp.__module__ != self.module.__name__:
                raise TypeError(f"{tp.__qualname__} is not defined in {self.module.__name__}")
            return interface_name(tp.__name__)
        origin, args = _origin(tp), typing.get_args(tp)
        if origin is typing.Literal:
            return " | ".join(_literal(a) for a in args)
        if origin is typing.Union:
            return " | ".join(self.ts(a) for a in args)
        if origin is list:
            inner = self.ts(args[0])
            return f"({inner})[]" if " | " in inner else f"{inner}[]"
        if origin is tuple and args and args[-1] is not Ellipsis:
            return f"[{', '.join(self.ts(a) for a in args)}]"
        if origin is dict and args and args[0] is str:
            return f"Record<string, {self.ts(args[1])}>"
        raise TypeError(f"no TypeScript for {tp!r}")

    def interface(self, name: str, cls: Any) -> list[str]:
        bases = [b for b in getattr(cls, "__orig_bases__", ()) if typing_extensions.is_typeddict(b)]
        inherited = {key for b in bases for key in b.__annotations__}
        hints = typing_extensions.get_type_hints(cls)
        strings = [k for k, v in cls.__annotations__.items() if isinstance(v, str | typing.ForwardRef)]
        if strings:  # string annotations hide NotRequired from __required_keys__
            raise TypeError(
                f"{name} has string annotations ({', '.join(strings)}): no `from __future__ import annotations`"
            )
        extends = f" extends {', '.join(interface_name(b.__name__) for b in bases)}" if bases else ""
        lines = [*comment(self.docs.get(name), ""), f"export interface {interface_name(name)}{extends} {{"]
        for key in cls.__annotations__:
            if key in inherited:
                continue
            optional = "" if key in cls.__required_keys__ else "?"
            lines += comment(self.docs.get(f"{name}.{key}"), "  ")
            lines.append(f"  {key}{optional}: {self.ts(hints[key])};")
        return [*lines, "}"]

    def alias(self, name: str, value: Any) -> list[str]:
        if _origin(value) is typing.Union:
            parts = [self.ts(a) for a in typing.get_args(value)]
        else:
            parts = [self.ts(value, alias=name)]
        lines = comment(self.docs.get(name), "")
        if len(parts) > 3:  # a long union: one member a line
            return [*lines, f"export type {name} =", *(f"  | {p}" for p in parts[:-1]), f"  | {parts[-1]};"]
        return [*lines, f"export type {name} = {' | '.join(parts)};"]

    def render(self) -> str:
        blocks = []
        for name in self.order:
            if name in self.typeddicts:
                blocks.append(self.interface(name, self.typeddicts[name]))
            else:
                blocks.append(self.alias(name, self.aliases[name]))
        return HEADER + "\n" + "\n\n".join("\n".join(b) for b in blocks) + "\n"


def _origin(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is types.UnionType:
        return typing.Union
    if origin is typing_extensions.Literal:
        return typing.Literal
    return origin


def _same(a: Any, b: Any) -> bool:
    """The same union or ``Literal`` (an alias is named where its value stands)."""
    if _origin(a) not in (typing.Union, typing.Literal) or _origin(a) is not _origin(b):
        return False
    return typing.get_args(a) == typing.get_args(b)


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    raise TypeError(f"no TypeScript literal for {value!r}")


def load_schema() -> types.ModuleType:
    """This checkout's schema module, loaded from its file (it imports only ``typing``), so neither
    the package nor an installed nbagent elsewhere is imported."""
    name = "_nbagent_view_schema"
    spec = importlib.util.spec_from_file_location(name, SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # get_type_hints reads the module's globals from here
    spec.loader.exec_module(module)
    return module


def render() -> str:
    """The TypeScript declaration file of the schema in this checkout."""
    return Generator(load_schema(), SOURCE.read_text(encoding="utf-8")).render()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale; write nothing")
    args = parser.parse_args(argv)
    text = render()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else None
    name = TARGET.relative_to(ROOT)
    if args.check:
        if current != text:
            print(f"{name} is stale: regenerate it with `{COMMAND}`", file=sys.stderr)
            return 1
        print(f"{name} is current")
        return 0
    if current == text:
        print(f"{name} is current")
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
