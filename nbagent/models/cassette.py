"""A recording model for tutorial authors: real answers, replayed offline (``record:``/``replay:``).

``record:openai:gpt-4o-mini`` asks the real model and stores each answer in a cassette, keyed by the
request's content (system prompt, tools, and each message's role and content); ``replay:…`` answers
from the cassette and fails clearly on a request it has not seen, naming what differs from the
closest recorded one. In a notebook the cassette is ``<notebook>.nbagent-cassette.json`` beside it,
meant for git, so a tutorial Runs All in CI with no key and no network.

Record modes are vcrpy's and pytest-recording's (``NBAGENT_RECORD_MODE`` overrides the prefix's):
``none`` replays only (``replay:``); ``once`` records while the cassette is missing, then replays;
``new_episodes`` replays what it has and records what it has not (``record:``); ``all`` asks the
model every time and overwrites; ``rewrite`` starts the cassette afresh and records everything.
Times in a request (ISO dates such as a DataFrame's ``captured="…"``) match any time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from nbagent.log.vocabulary import Failure
from nbagent.models.base import (
    CancelSignalLike,
    Chunk,
    Finish,
    Model,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
    chunk_to_json,
)

MODES = ("none", "once", "new_episodes", "all", "rewrite")
MODE_DOES = {
    "none": "answers from it; a request not in it fails",
    "once": "records while it is missing, then answers from it",
    "new_episodes": "answers what it holds and records the rest",
    "all": "asks the model every time and records",
    "rewrite": "starts it afresh and records every answer",
}
"""What each mode does with the cassette, in words."""
MODE_ENV = "NBAGENT_RECORD_MODE"
CASSETTE_ENV = "NBAGENT_CASSETTE"
CASSETTE_SUFFIX = ".nbagent-cassette.json"
VERSION = 1

_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")


def cassette_beside(notebook: Path | None, cwd: Path) -> Path:
    """A notebook's cassette: ``<notebook stem>.nbagent-cassette.json`` beside it (``nbagent-cassette
    .json`` in ``cwd`` when the notebook is not known)."""
    if notebook is None:
        return cwd / CASSETTE_SUFFIX.lstrip(".")
    return notebook.with_name(notebook.stem + CASSETTE_SUFFIX)


def request_record(model: str, request: ModelRequest) -> dict[str, Any]:
    """What a request's key is made of: the model, the system prompt, the tools, and each message's
    role and content (ids, sources and times left out: they differ from run to run)."""
    return {
        "model": model,
        "system": _timeless(request.system),
        "tools": _timeless(json.loads(json.dumps(request.tools, default=dict))),
        "messages": [
            {"role": m.role, "content": _timeless(json.loads(json.dumps(m.content, default=dict)))}
            for m in request.messages
        ],
    }


def request_key(record: Mapping[str, Any]) -> str:
    """The cassette key of a request record: SHA-256 of its canonical JSON."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _timeless(value: Any) -> Any:
    if isinstance(value, str):
        return _TIME.sub("<time>", value)
    if isinstance(value, list | tuple):
        return [_timeless(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _timeless(v) for k, v in value.items()}
    return value


def chunk_from_json(data: Mapping[str, Any]) -> Chunk:
    """The inverse of :func:`chunk_to_json` for a recorded answer."""
    kind = data.get("type")
    if kind == "text":
        return TextDelta(str(data["text"]))
    if kind == "reasoning":
        return ReasoningDelta(str(data["text"]))
    if kind == "tool-call":
        return ToolCallChunk(str(data["id"]), str(data["name"]), str(data["arguments"]))
    if kind == "usage":
        return Usage(
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            cached_input_tokens=int(data.get("cached_input_tokens", 0)),
        )
    if kind == "finish":
        return Finish(data["kind"])
    raise ValueError(f"a cassette answer holds an unknown chunk {data!r}")


class Cassette:
    """The recorded interactions of one file: ``{"version", "interactions": [{key, request, answer}]}``."""

    def __init__(self, path: Path, *, fresh: bool = False) -> None:
        self.path = path
        self.existed = path.exists()
        self.interactions: list[dict[str, Any]] = [] if fresh else self._load()

    def _load(self) -> list[dict[str, Any]]:
        if not self.existed:
            return []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CassetteError(f"cannot read the cassette {self.path}: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
            raise CassetteError(f"{self.path} is not an nbagent cassette (no interactions list)")
        return list(data["interactions"])

    def find(self, key: str) -> dict[str, Any] | None:
        return next((i for i in self.interactions if i.get("key") == key), None)

    def put(self, key: str, request: dict[str, Any], answer: list[dict[str, Any]]) -> None:
        """Store (or overwrite) one answer and write the file at once, whole (a crash keeps the old)."""
        entry = {"key": key, "request": request, "answer": answer}
        for index, old in enumerate(self.interactions):
            if old.get("key") == key:
                self.interactions[index] = entry
                break
        else:
            self.interactions.append(entry)
        text = json.dumps(
            {"version": VERSION, "interactions": self.interactions}, indent=1, ensure_ascii=False
        )
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(text + "\n", encoding="utf-8")
        os.replace(temporary, self.path)


class CassetteError(Exception):
    """A cassette that cannot be read."""


def what_differs(record: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]], where: Path) -> str:
    """Why ``record`` has no answer: the first difference from the closest recorded request."""
    same_model = [r["request"] for r in recorded if r.get("request", {}).get("model") == record["model"]]
    if not same_model:
        models = sorted({str(r.get("request", {}).get("model")) for r in recorded})
        held = f"it holds {', '.join(models)}" if models else "it is empty"
        return f"{where.name} holds no request for {record['model']} ({held})"

    def shared(other: Mapping[str, Any]) -> int:
        n = 0
        for a, b in zip(record["messages"], other["messages"], strict=False):
            if a != b:
                break
            n += 1
        return n

    closest = max(same_model, key=shared)
    if closest["system"] != record["system"]:
        return (
            f"the system prompt differs: recorded {_brief(closest['system'])}, now {_brief(record['system'])}"
        )
    if closest["tools"] != record["tools"]:
        return f"the tools differ: recorded {_names(closest['tools'])}, now {_names(record['tools'])}"
    n = shared(closest)
    mine, theirs = record["messages"], closest["messages"]
    if n < min(len(mine), len(theirs)):
        return (
            f"message {n + 1} ({mine[n]['role']}) differs: recorded {_brief(theirs[n]['content'])}, "
            f"now {_brief(mine[n]['content'])}"
        )
    if len(mine) > len(theirs):
        return (
            f"this request has {len(mine)} messages, the closest recorded one {len(theirs)}; the first new "
            f"one is {mine[n]['role']} {_brief(mine[n]['content'])}"
        )
    return f"this request has {len(mine)} messages, the closest recorded one {len(theirs)}"


def _brief(content: Any) -> str:
    if isinstance(content, list):
        texts = [
            str(b.get("text") or b.get("name") or b.get("type")) for b in content if isinstance(b, Mapping)
        ]
        content = " ".join(texts)
    text = " ".join(str(content).split()) if content is not None else "(none)"
    return f"«{text[:77] + '…' if len(text) > 78 else text}»"


def _names(tools: Any) -> str:
    names = [str(t.get("name")) for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else []
    return ", ".join(names) or "none"


class RecordingModel:
    """Answers from a cassette (``replay:``), or asks ``spec`` and records (``record:``); see the module.

    ``cassette`` is the file; in a notebook the kernel sets it beside the notebook, elsewhere pass it
    or set ``NBAGENT_CASSETTE``. The real model is built only when a request must reach it, so a
    replay needs no key, no SDK and no network.
    """

    def __init__(
        self,
        spec: str,
        mode: str = "none",
        cassette: str | os.PathLike[str] | None = None,
        *,
        prefix: str | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"record mode {mode!r} is not one of {', '.join(MODES)} ({MODE_ENV})")
        self.spec = spec
        self.mode = mode
        self.cassette: Path | None = Path(cassette) if cassette is not None else None
        self.name = f"{prefix or ('replay' if mode == 'none' else 'record')}:{spec}"
        prefix, _, rest = spec.partition(":")
        self.provider = prefix if rest else spec
        self.model = rest or spec
        self.replays_only = mode == "none"
        """A replay needs no SDK or key (the magics check neither)."""
        self._inner: Model | None = None
        self._tape: Cassette | None = None

    def _open(self) -> Cassette:
        path = self.cassette
        if path is None and os.environ.get(CASSETTE_ENV):
            path = self.cassette = Path(os.environ[CASSETTE_ENV])
        if path is None:
            raise CassetteError(
                f"{self.name}: no cassette file chosen; in a notebook it is <notebook>{CASSETTE_SUFFIX} "
                f"beside it, elsewhere pass cassette=PATH or set {CASSETTE_ENV}"
            )
        if self._tape is None or self._tape.path != path:
            self._tape = Cassette(path, fresh=self.mode == "rewrite")
        return self._tape

    def _real(self) -> Model:
        if self._inner is None:
            from nbagent.models.registry import resolve_model

            self._inner = resolve_model(self.spec)
        return self._inner

    async def stream(self, request: ModelRequest, signal: CancelSignalLike) -> AsyncIterator[Chunk]:
        try:
            tape = self._open()
        except CassetteError as exc:
            yield Finish("error", Failure(str(exc), code="BAD_REQUEST"))
            return
        record = request_record(self.spec, request)
        key = request_key(record)
        found = tape.find(key)
        replay = found is not None and self.mode in ("none", "once", "new_episodes")
        if replay:
            assert found is not None
            for data in found["answer"]:
                if signal.cancelled:
                    return
                chunk = chunk_from_json(data)
                if not isinstance(chunk, Usage):  # a replay used no tokens: it reports no usage
                    yield chunk
            return
        if self.mode == "none" or (self.mode == "once" and tape.existed):
            why = what_differs(record, tape.interactions, tape.path)
            yield Finish(
                "error",
                Failure(
                    f"{self.name}: no recorded answer for this request in {tape.path.name}: {why}. "
                    f"Record it with `%agent model record:{self.spec}` (or {MODE_ENV}=new_episodes) "
                    "and a key, then replay again",
                    code="BAD_REQUEST",
                ),
            )
            return
        answer: list[dict[str, Any]] = []
        async for chunk in self._real().stream(request, signal):
            answer.append(chunk_to_json(chunk))
            if isinstance(chunk, Finish) and chunk.kind != "error":
                tape.put(key, record, answer)  # before the last chunk: the loop stops reading at Finish
            yield chunk


def recording_model(rest: str) -> RecordingModel:
    """``record:PROVIDER:MODEL`` (mode ``new_episodes``, or ``NBAGENT_RECORD_MODE``)."""
    return RecordingModel(
        _inner_spec("record", rest), os.environ.get(MODE_ENV) or "new_episodes", prefix="record"
    )


def replaying_model(rest: str) -> RecordingModel:
    """``replay:PROVIDER:MODEL`` (mode ``none``, or ``NBAGENT_RECORD_MODE``)."""
    return RecordingModel(_inner_spec("replay", rest), os.environ.get(MODE_ENV) or "none", prefix="replay")


def _inner_spec(prefix: str, rest: str) -> str:
    from nbagent.errors import NbagentError

    if rest.split(":", 1)[0] in ("record", "replay") or not rest.strip():
        raise NbagentError(
            f"{prefix}: takes a provider model such as {prefix}:openai:gpt-4o-mini, not {rest!r}"
        )
    return rest


__all__ = [
    "CASSETTE_SUFFIX",
    "MODES",
    "MODE_DOES",
    "RecordingModel",
    "cassette_beside",
    "recording_model",
    "replaying_model",
]
