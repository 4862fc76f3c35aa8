"""Local HTTP servers that speak the OpenAI and Anthropic streaming wire protocols, for tests.

Stdlib only (``http.server.ThreadingHTTPServer``): each request runs in its own thread, so a handler
can stall while the test drives the client from its asyncio loop, and the handler can watch its
socket to record the moment the client hangs up. Bodies are sent with chunked transfer encoding,
as real providers do, so cutting a stream mid-body is a protocol error the client can see.

A test queues replies (``server.reply(...)``); each request pops the next one and is recorded
(``server.requests``) with its path, headers and parsed JSON body.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Stream:
    """An SSE reply: ``events`` are ``(event_name_or_None, data)``; data dicts are JSON-encoded.

    ``stall_after`` sends that many events, then holds the connection open without writing until
    the client closes it (or ``stall_seconds`` pass). ``cut_after`` sends that many events and then
    drops the connection without ending the chunked body. ``delay`` pauses between events.
    """

    events: list[tuple[str | None, Any]]
    stall_after: int | None = None
    cut_after: int | None = None
    delay: float = 0.0
    stall_seconds: float = 30.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Error:
    """A non-2xx JSON reply with optional headers such as ``Retry-After``."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Stall:
    """Accept the request and never send response headers (until the client hangs up)."""

    seconds: float = 30.0


Reply = Stream | Error | Stall


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class ProviderServer:
    """A scripted provider endpoint on 127.0.0.1; use as a context manager."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.stalled = threading.Event()
        """Set when a handler starts stalling (the client has what it will get)."""
        self.stalled_at: float | None = None
        self.closed_at: float | None = None
        """``time.monotonic()`` when a stalled handler saw the client close its connection."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def __enter__(self) -> ProviderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- called from handler threads --------------------------------------------------------

    def _mark_stalled(self) -> None:
        self.stalled_at = time.monotonic()
        self.stalled.set()

    def _wait_for_hangup(self, sock: socket.socket, seconds: float) -> None:
        """Block until the peer closes ``sock`` (recording when), or ``seconds`` pass."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 0.005)
            if not readable:
                continue
            try:
                data = sock.recv(1024, socket.MSG_PEEK)
            except OSError:
                data = b""
            if not data:
                self.closed_at = time.monotonic()
                return
            sock.recv(len(data))  # ignore anything the client sends meanwhile


def _make_handler(server: ProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.requests.append(Recorded("POST", self.path, headers, body))
            if not server.replies:
                self._send_error(Error(500, {"error": {"message": "test server: no reply queued"}}))
                return
            reply = server.replies.popleft()
            if isinstance(reply, Error):
                self._send_error(reply)
            elif isinstance(reply, Stall):
                server._mark_stalled()
                server._wait_for_hangup(self.connection, reply.seconds)
                self.close_connection = True
            else:
                self._send_stream(reply)

        def _send_error(self, reply: Error) -> None:
            data = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, reply: Stream) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.close_connection = True
            for i, (name, data) in enumerate(reply.events):
                if reply.stall_after is not None and i == reply.stall_after:
                    self.wfile.flush()
                    server._mark_stalled()
                    server._wait_for_hangup(self.connection, reply.stall_seconds)
                    return
                if reply.cut_after is not None and i == reply.cut_after:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if i and reply.delay:
                    time.sleep(reply.delay)
                self._chunk(_sse(name, data))
            if reply.stall_after is not None and reply.stall_after >= len(reply.events):
                self.wfile.flush()
                server._mark_stalled()
                server._wait_for_hangup(self.connection, reply.stall_seconds)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def _sse(name: str | None, data: Any) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name else ""
    return (head + f"data: {text}\n\n").encode()


# -- OpenAI chat-completions chunks ----------------------------------------------------------


def oa_chunk(
    delta: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    usage: Mapping[str, int] | None = None,
    model: str = "test-model",
) -> tuple[None, dict[str, Any]]:
    """One ``chat.completion.chunk``; ``delta=None`` with ``usage`` makes the final usage chunk."""
    choices = [] if delta is None else [{"index": 0, "delta": dict(delta), "finish_reason": finish_reason}]
    out: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": choices,
    }
    if usage is not None:
        out["usage"] = {**usage, "total_tokens": sum(usage.values())}
    return (None, out)


def oa_text_stream(*pieces: str, finish: str = "stop", prompt: int = 10, completion: int = 3) -> list:
    """A plain text answer streamed in ``pieces``, then finish, usage and ``[DONE]``."""
    events = [oa_chunk({"role": "assistant", "content": ""})]
    events += [oa_chunk({"content": p}) for p in pieces]
    events.append(oa_chunk({}, finish))
    events.append(oa_chunk(None, usage={"prompt_tokens": prompt, "completion_tokens": completion}))
    events.append((None, "[DONE]"))
    return events


def oa_tool_call_stream(calls: Iterable[tuple[str, str, str]], *, split: int = 5) -> list:
    """Tool calls ``(id, name, arguments_json)`` whose arguments arrive in pieces of ``split`` chars."""
    events = [oa_chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, args) in enumerate(calls):
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        events.append(oa_chunk({"tool_calls": [first]}))
        for start in range(0, len(args), split):
            piece = {"index": index, "function": {"arguments": args[start : start + split]}}
            events.append(oa_chunk({"tool_calls": [piece]}))
    events.append(oa_chunk({}, "tool_calls"))
    events.append(oa_chunk(None, usage={"prompt_tokens": 20, "completion_tokens": 7}))
    events.append((None, "[DONE]"))
    return events


# -- Anthropic messages events ---------------------------------------------------------------


def an_message_start(input_tokens: int = 12, model: str = "claude-test") -> tuple[str, dict[str, Any]]:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1},
            },
        },
    )


def an_block_start(index: int, block: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": dict(block)},
    )


def an_delta(index: int, delta: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": dict(delta)})


def an_block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def an_message_end(stop_reason: str, output_tokens: int = 5) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def an_text_stream(*pieces: str, stop_reason: str = "end_turn") -> list:
    events: list = [an_message_start(), an_block_start(0, {"type": "text", "text": ""})]
    events.append(("ping", {"type": "ping"}))
    events += [an_delta(0, {"type": "text_delta", "text": p}) for p in pieces]
    events.append(an_block_stop(0))
    events += an_message_end(stop_reason)
    return events


# -- driving a model -------------------------------------------------------------------------


class Signal:
    """A minimal cancellation signal (``cancelled``, ``await wait()``, ``cancel()``) for unit tests."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._waiters: list[Any] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()
        for loop, future in self._waiters:
            loop.call_soon_threadsafe(lambda f=future: f.done() or f.set_result(None))

    async def wait(self) -> None:
        import asyncio

        if self._event.is_set():
            return
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._waiters.append((loop, future))
        await future


async def collect(model: Any, request: Any, signal: Signal | None = None) -> list[Any]:
    """Every chunk the model streams for ``request``."""
    return [chunk async for chunk in model.stream(request, signal or Signal())]


async def consume_until_stalled(
    server: ProviderServer, model: Any, request: Any, signal: Signal, seen: list[Any], expect: int
) -> Any:
    """Start streaming into ``seen`` on a task; return it once the server stalls and ``expect``
    chunks have arrived (so a cancel then hits a read that is really waiting on the network)."""
    import asyncio

    async def consume() -> None:
        async for chunk in model.stream(request, signal):
            seen.append(chunk)

    task = asyncio.ensure_future(consume())
    deadline = time.monotonic() + 120
    while not (server.stalled.is_set() and len(seen) >= expect):
        if task.done() or time.monotonic() > deadline:
            raise AssertionError(f"the stream did not stall after {expect} chunks: {seen}")
        await asyncio.sleep(0.005)
    return task


def wait_for_hangup(server: ProviderServer, seconds: float = 60.0) -> float | None:
    """``server.closed_at`` once the client hung up (or ``None`` after ``seconds``: a bound for a hang,
    generous so a loaded machine is not taken for one)."""
    deadline = time.monotonic() + seconds
    while server.closed_at is None and time.monotonic() < deadline:
        time.sleep(0.002)
    return server.closed_at
