"""Tools: typed Python functions the model can call, their JSON schemas, and their results."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import re
import threading
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from nbagent._json import MAX_DEPTH, FrozenDict, freeze, nests_deeper, storable
from nbagent.log.messages import UserMessage

T = TypeVar("T")


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: content for the model, and optional context for the next step.

    ``content`` is a ``str`` or a list of blocks; ``additional_contexts`` are ``UserMessage``s queued
    to ``next-step`` after this result; ``concludes_turn`` ends the turn after this step.
    """

    content: str | Sequence[Any]
    is_error: bool = False
    additional_contexts: Sequence[UserMessage] = ()
    concludes_turn: bool = False
    code: str | None = None
    """An error code for ``tool/result.error`` (set by nbagent for its own failures)."""


class ToolArgumentsError(Exception):
    """The model's arguments were not valid JSON or failed the tool's schema."""


_ARG_LINE = re.compile(r"^\s{2,}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and Google/NumPy-style parameter notes."""
    if not doc:
        return "", {}
    doc = inspect.cleandoc(doc)
    parts = re.split(r"\n\s*(?:Args|Arguments|Parameters)\s*:?\s*\n(?:\s*-+\s*\n)?", doc, maxsplit=1)
    description = parts[0].strip()
    params: dict[str, str] = {}
    if len(parts) == 2:
        for line in parts[1].splitlines():
            m = _ARG_LINE.match("  " + line if not line.startswith(" ") else line)
            if m:
                params[m.group(1).lstrip("*")] = m.group(2).strip()
            elif line.strip() and not line.startswith(" ") and line.rstrip().endswith(":"):
                break
    return description, params


@dataclass(frozen=True, eq=False)
class Tool:
    """A callable the model may use; build one with :func:`tool`."""

    fn: Callable[..., Any]
    name: str
    description: str
    parameters: FrozenDict
    parallel_safe: bool = False
    requires_approval: bool = False
    _args_model: type[BaseModel] | None = field(default=None, repr=False)
    _signal_param: str | None = field(default=None, repr=False)

    @property
    def schema(self) -> FrozenDict:
        """``{"name", "description", "parameters"}``: what the model is told about this tool."""
        return FrozenDict(name=self.name, description=self.description, parameters=self.parameters)

    def parse_arguments(self, arguments: str) -> dict[str, Any]:
        """Validate the model's raw JSON text against the schema; raise ``ToolArgumentsError``."""
        try:
            raw = storable(json.loads(arguments)) if arguments.strip() else {}
        except ValueError as exc:
            raise ToolArgumentsError(f"arguments are not valid JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise ToolArgumentsError(f"arguments must be a JSON object, got {type(raw).__name__}")
        if self._args_model is None:
            return raw
        try:
            parsed = self._args_model.model_validate(raw)
        except ValidationError as exc:
            lines = [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()]
            raise ToolArgumentsError("arguments do not match the schema: " + "; ".join(lines)) from None
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    async def invoke(self, arguments: dict[str, Any], signal: Any) -> Any:
        """Run the body and return its raw value: an async body on the agent's loop, a sync body
        in a worker thread of its own, so a blocking tool never stalls the loop (SPEC §9.7)."""
        if self._signal_param is not None:
            arguments = {**arguments, self._signal_param: signal}
        if _is_async(self.fn):
            return await self.fn(**arguments)
        result = await _in_worker_thread(functools.partial(self.fn, **arguments), f"nbagent tool {self.name}")
        if inspect.isawaitable(result):  # a sync function that hands back a coroutine
            result = await result
        return result


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def _in_worker_thread(fn: Callable[[], T], name: str) -> T:
    """Run ``fn`` in a new daemon thread (with the caller's context variables) and await its result.

    One thread per call, never a pool: a body that never returns holds no pool slot and does not
    keep the interpreter from exiting. Cancelling the wait abandons the thread (its late result is
    dropped); the cancel grace decides when that happens (SPEC §5.6).
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.done():
            outcome()

    def body() -> None:
        try:
            value = context.run(fn)
        except BaseException as exc:
            report = functools.partial(settle, functools.partial(done.set_exception, exc))
        else:
            report = functools.partial(settle, functools.partial(done.set_result, value))
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(report)

    threading.Thread(target=body, name=name, daemon=True).start()
    return await done


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool = False,
    requires_approval: bool = False,
) -> Any:
    """Make a tool from a sync or async function: ``@tool``, ``@tool(name=...)`` or ``tool(fn, ...)``.

    The JSON schema comes from the type hints and the docstring; a parameter named ``signal``
    receives the turn's cancellation signal and is left out of the schema.
    """

    def build(f: Callable[..., Any]) -> Tool:
        if isinstance(f, Tool):
            return f
        hints = typing.get_type_hints(f)
        doc, notes = _parse_docstring(f.__doc__)
        fields: dict[str, Any] = {}
        signal_param = None
        for pname, param in inspect.signature(f).parameters.items():
            if pname == "signal":
                signal_param = pname
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {f.__name__}: *args/**kwargs cannot be described to a model")
            annotation = hints.get(pname, Any)
            default = ... if param.default is param.empty else param.default
            fields[pname] = (annotation, Field(default, description=notes.get(pname)))
        model = create_model(f"{f.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return Tool(
            fn=f,
            name=name or f.__name__,
            description=description if description is not None else doc,
            parameters=freeze(schema, "schema"),
            parallel_safe=parallel_safe,
            requires_approval=requires_approval,
            _args_model=model,
            _signal_param=signal_param,
        )

    return build(fn) if fn is not None else build


def as_tools(tools: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    """Index tools by name, wrapping plain functions; duplicate names are an error."""
    out: dict[str, Tool] = {}
    for t in tools:
        t = t if isinstance(t, Tool) else tool(t)
        if t.name in out:
            raise ValueError(f"two tools are named {t.name!r}")
        out[t.name] = t
    return out


def result_blocks(value: Any) -> tuple[list[Any], bool, ToolResult | None]:
    """Normalize a tool's return value to ``(content blocks, is_error, ToolResult or None)``."""
    if isinstance(value, ToolResult):
        content = value.content
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        return blocks, value.is_error, value
    if isinstance(value, str):
        return [{"type": "text", "text": value}], False, None
    if value is None:
        return [{"type": "text", "text": ""}], False, None
    if isinstance(value, bool | int | float):
        return [{"type": "text", "text": json.dumps(value)}], False, None
    if nests_deeper(value):  # measured without recursion: 5,000 levels are a clear error, not a crash
        raise ValueError(f"the tool's value nests deeper than {MAX_DEPTH} levels, which the log cannot store")
    try:  # text nbagent cannot store (lone surrogates, e.g. undecodable file names) gets U+FFFD
        text = orjson.dumps(storable(value), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = repr(value)
    return [{"type": "text", "text": text}], False, None
