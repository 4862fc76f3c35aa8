"""The view models' types (issue #30 item 3): the Python ``TypedDict``s of nbagent/views/schema.py
are what the fold writes, and labextension/src/widgets/view_model.d.ts is what they generate.

A stale TypeScript file fails here (regenerate it with ``python3 scripts/gen_view_types.py``); so
does a field the views write that its type does not declare, a required field they leave out, a
value of another type, and a node type no test log makes.
"""

from __future__ import annotations

import importlib.util
import sys
import types
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import typing_extensions
from view_sessions import fork_events, golden_events

from nbagent.views import Timeline, TurnView, inbox_item, inbox_model, timeline_json
from nbagent.views.diff import diff_json, turn_diff
from nbagent.views.schema import DiffModel, InboxModel, TimelineBundle, TimelineSnapshot, ViewNode

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_view_types", ROOT / "scripts" / "gen_view_types.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_view_types", module)
    spec.loader.exec_module(module)
    return module


def test_the_typescript_types_are_generated_from_the_python_ones() -> None:
    gen = _generator()
    committed = gen.TARGET.read_text(encoding="utf-8")
    assert gen.render() == committed, (
        f"{gen.TARGET.relative_to(ROOT)} is stale: nbagent/views/schema.py changed. "
        f"Regenerate it with `{gen.COMMAND}` and commit it."
    )


def test_the_generator_writes_interfaces_a_discriminated_union_and_the_bundle() -> None:
    text = _generator().render()
    assert text.startswith("// Generated from nbagent/views/schema.py by `python3 scripts/gen_view_types.py`")
    assert "export interface ITurnNode extends INodeBase {\n  type: 'turn';" in text
    assert "export interface IMessageNode extends INodeBase, IMessageFields {" in text
    assert "export type ViewNode =\n  | ITurnNode\n  | IStepNode\n" in text
    assert "  nodes: ViewNode[];" in text
    assert "  session?: ISessionRef | null;" in text  # NotRequired: optional
    assert "  input_tokens?: number;" in text  # total=False: every field optional
    assert "  md?: unknown[];" in text  # Any: unknown
    assert "[field: string]" not in text and "any" not in text.replace("many", "")


# -- what the views write is what the types declare ----------------------------------------------


def _origin(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    return typing.Union if origin is types.UnionType else origin


def problems(value: Any, tp: Any, where: str) -> list[str]:
    """Where ``value`` is not of type ``tp`` (a schema type): undeclared or missing keys, wrong types."""
    if tp is Any:
        return []
    if tp is None or tp is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    if tp is float:
        return [] if type(value) in (int, float) else [f"{where}: {value!r} is not a number"]
    if tp in (str, int, bool):
        return [] if type(value) is tp else [f"{where}: {value!r} is not {tp.__name__}"]
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not a {tp.__name__}"]
        hints = typing_extensions.get_type_hints(tp)
        out = [f"{where}: {key!r} is not a field of {tp.__name__}" for key in value if key not in hints]
        out += [
            f"{where}: {tp.__name__} misses {key!r}" for key in sorted(tp.__required_keys__ - value.keys())
        ]
        for key, item in value.items():
            if key in hints:
                out += problems(item, hints[key], f"{where}.{key}")
        return out
    origin, args = _origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return [] if value in args else [f"{where}: {value!r} is none of {args}"]
    if origin is typing.Union:
        if isinstance(value, dict) and "type" in value:  # a node: its type names its TypedDict
            tagged = [a for a in args if typing_extensions.is_typeddict(a) and _tag(a) == value["type"]]
            if tagged:
                return problems(value, tagged[0], f"{where}<{value['type']}>")
        tries = [problems(value, a, where) for a in args]
        return [] if any(not t for t in tries) else min(tries, key=len)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        return [p for i, item in enumerate(value) for p in problems(item, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not an object"]
        return [p for k, v in value.items() for p in problems(v, args[1], f"{where}.{k}")]
    raise TypeError(f"the test cannot check {tp!r}")


def _tag(node_type: Any) -> str:
    (tag,) = typing.get_args(typing_extensions.get_type_hints(node_type)["type"])
    return tag


NODE_TYPES = {_tag(t) for t in typing.get_args(ViewNode)}


def _bundles() -> list[TimelineBundle]:
    out = []
    for events in (golden_events(), fork_events()):
        out += [timeline_json(events), timeline_json(events, max_text=20), timeline_json(events, max_turns=1)]
        out += [timeline_json(events, turn=turn, headline="followup «x» · turn 2 · done") for turn in (1, 2)]
        live = TurnView("followup", "plot it")
        live.session = {"id": "s-1", "file": "s.nbagent.sqlite"}
        live.feed(events)
        live.claimed(2)
        out.append(live.to_json())
        waiting = TurnView("steer", "later")
        waiting.session = None
        out.append(waiting.to_json())
    return out


def test_every_bundle_a_session_folds_to_has_only_the_fields_its_types_declare() -> None:
    bundles = _bundles()
    for i, bundle in enumerate(bundles):
        assert problems(bundle, TimelineBundle, f"bundle {i}") == []
    seen = {n["type"] for b in bundles for n in b["nodes"]}
    assert seen == NODE_TYPES, f"no test log makes {NODE_TYPES - seen} (tests/view_sessions.py)"
    fields = {key for b in bundles for n in b["nodes"] for key in n}
    assert {"cut", "omitted", "sent_tokens", "replay_text", "done", "done_below", "message_id"} <= fields


def test_the_widget_snapshot_and_the_patches_hold_declared_fields_only() -> None:
    for events in (golden_events(), fork_events()):
        timeline = Timeline()
        patches = [p for i in range(0, len(events), 5) for p in timeline.feed(events[i : i + 5])]
        assert problems(timeline.snapshot(), TimelineSnapshot, "snapshot") == []
        for patch in patches:
            if patch[0] == "add":
                assert problems(patch[1], ViewNode, "add") == []
            elif patch[0] in ("set", "text"):
                node = timeline.nodes[patch[1]]
                declared = typing_extensions.get_type_hints(
                    next(t for t in typing.get_args(ViewNode) if _tag(t) == node["type"])
                )
                written = patch[2].keys() if patch[0] == "set" else {patch[2]}
                assert set(written) <= declared.keys(), (patch, node["type"])


def test_the_inbox_model_and_the_diff_are_what_their_types_declare() -> None:
    item = {
        "id": "m-1",
        "role": "user",
        "content": [{"type": "text", "text": "hi\nthere"}],
        "source": {"kind": "user"},
    }
    model = inbox_model([inbox_item(item, "next-step")], [], "idle")
    assert problems(model, InboxModel, "inbox") == []
    golden, fork = golden_events(), fork_events()
    for a, b, ta, tb in ((golden, golden, 1, 2), (golden, golden, 2, 2), (golden, fork, 2, 2)):
        diff = diff_json(turn_diff(a, b, turn_a=ta, turn_b=tb, names=("a" * 8, "b" * 8)))
        assert problems(diff, DiffModel, "diff") == []


def test_the_check_finds_an_undeclared_field_a_missing_one_and_a_wrong_type() -> None:
    node = dict(timeline_json(fork_events())["nodes"][0])  # the forked node
    assert problems({**node, "colour": "red"}, ViewNode, "n") == [
        "n<forked>: 'colour' is not a field of ForkedNode"
    ]
    del node["at"]
    assert problems(node, ViewNode, "n") == ["n<forked>: ForkedNode misses 'at'"]
    assert problems({**node, "at": "9"}, ViewNode, "n") == ["n<forked>.at: '9' is not int"]
