"""Shared test helpers: compact traces of the durable log (import them from ``eventtrace``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from nbagent.log.events import Event


def label(message: Any) -> str:
    """A message's label in traces: its first text line (or the tool call id of a result)."""
    content = message["content"]
    for block in content:
        if block.get("type") == "text":
            return block["text"].splitlines()[0] if block["text"] else ""
        if block.get("type") == "tool-result":
            return block["tool_call_id"]
    return "?"


def trace(events: Iterable[Event], *, chunks: bool = False, estimates: bool = False) -> list[str]:
    """The log as short strings, SPEC §4 vocabulary (consecutive chunks fold into one ``CH``).

    ``request/estimate`` (the token meter, SPEC §12) is left out unless ``estimates``: turn-order
    traces are about what the model saw; tests/test_estimate.py pins the estimates."""
    out: list[str] = []
    for ev in events:
        d = ev.data
        t = ev.type
        if t == "request/estimate":
            if estimates:
                out.append(f"EST {d['turn']}.{d['step']}")
        elif t == "agent/inbox/spliced":
            q = "nt" if d["target"] == "next-turn" else "ns"
            removed = d.get("removed_count", 0)
            ins = [label(m) for m in d["inserted"]]
            if removed and "outcome" not in d:
                out.append(f"CLM {q} {removed}")
            elif removed:
                out.append(f"CAN {q} {d['start']} {removed}" + (f" {ins}" if ins else ""))
            else:
                out.append(f"INS {q} {d['start']} {ins}")
        elif t == "turn/start":
            out.append(f"TS {d['turn']}")
        elif t == "turn/end":
            r = d["reason"]
            extra = ""
            if r["kind"] == "aborted":
                extra = ":" + r["reason"]["kind"]
            elif r["kind"] == "error":
                extra = ":" + r["error"]["code"]
            out.append(f"TE {d['turn']} {r['kind']}{extra}")
        elif t == "step/start":
            out.append(f"SS {d['turn']}.{d['step']}")
        elif t == "step/end":
            out.append(f"SE {d['turn']}.{d['step']}")
        elif t == "user/message":
            out.append(f"UM {label(d)}")
        elif t == "request/header":
            out.append(f"RH {d['reason']}")
        elif t == "assistant/chunk":
            if chunks or not out or out[-1] != "CH":
                out.append("CH")
        elif t == "assistant/message":
            calls = [b["id"] for b in d["message"]["content"] if b.get("type") == "tool-call"]
            text = "".join(b["text"] for b in d["message"]["content"] if b.get("type") == "text")
            mark = "*" if d.get("interrupted") else ""
            body = f" {calls}" if calls else (f" {text!r}" if text else "")
            out.append(f"AM{mark} {d['turn']}.{d['step']}{body}")
        elif t == "tool/call":
            out.append(f"TC {d['call_id']}")
        elif t == "tool/result":
            code = d.get("error", {}).get("code")
            out.append(f"TR {d['message']['source']['call_id']}" + (f" {code}" if code else ""))
        elif t == "llm/retry":
            out.append(f"RETRY {d['attempt']}")
        else:
            out.append(t)
    return out


def without_headers(lines: list[str]) -> list[str]:
    return [x for x in lines if not x.startswith("RH ")]


def run(coro: Any) -> Any:
    return asyncio.run(coro)
