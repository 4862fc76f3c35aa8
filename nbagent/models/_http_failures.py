"""Map provider SDK exceptions and HTTP statuses to nbagent ``Failure`` codes.

Duck-typed over the ``openai`` and ``anthropic`` SDKs (both raise ``APIStatusError`` with
``status_code``/``response``/``body``, ``APITimeoutError`` and ``APIConnectionError``) and their
``httpx2`` transport errors, so this module imports neither SDK. The loop's retry policy retries
``RATE_LIMIT``, ``SERVER``, ``TIMEOUT`` and ``TRANSPORT`` (SPEC §5.5); everything else ends the turn.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from nbagent.log.vocabulary import Failure
from nbagent.redaction import scrub

_OVERFLOW_HINTS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "input is too long",
    "exceeds the context",
)

_ERROR_TYPES = {
    # Anthropic ``error.type`` and OpenAI ``error.type``/``error.code`` values seen mid-stream,
    # where the HTTP status is already 200 and only the body says what went wrong.
    "rate_limit_error": ("RATE_LIMIT", 429),
    "rate_limit_exceeded": ("RATE_LIMIT", 429),
    "overloaded_error": ("SERVER", 529),
    "api_error": ("SERVER", 500),
    "server_error": ("SERVER", 500),
    "timeout_error": ("TIMEOUT", 504),
    "authentication_error": ("AUTH", 401),
    "permission_error": ("AUTH", 403),
    "invalid_request_error": ("BAD_REQUEST", 400),
    "not_found_error": ("BAD_REQUEST", 404),
    "request_too_large": ("BAD_REQUEST", 413),
    "context_length_exceeded": ("CONTEXT_OVERFLOW", 400),
}


def retry_after_ms(headers: Mapping[str, str] | None) -> int | None:
    """The provider's requested wait: ``retry-after-ms`` (ms), else ``Retry-After`` (seconds or a date)."""
    if not headers:
        return None
    raw_ms = _header(headers, "retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0, round(float(raw_ms)))
        except ValueError:
            pass
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    try:
        return max(0, round(float(raw) * 1000))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0, round((when.timestamp() - time.time()) * 1000))


def code_for_status(status: int, message: str = "") -> str:
    """The failure code of an HTTP status (with the message to spot context overflows)."""
    if status == 429:
        return "RATE_LIMIT"
    if status in (401, 403):
        return "AUTH"
    if status == 408:
        return "TIMEOUT"
    if status >= 500:
        return "SERVER"
    if status == 409:  # "conflict / lock timeout": transient, the SDKs themselves retry it
        return "SERVER"
    if 400 <= status < 500:
        return "CONTEXT_OVERFLOW" if is_context_overflow(message) else "BAD_REQUEST"
    return "UNKNOWN"


def is_context_overflow(text: str) -> bool:
    """Whether an error text says the request exceeds the model's context window."""
    low = text.lower()
    return any(hint in low for hint in _OVERFLOW_HINTS)


def failure_from_exception(
    exc: BaseException, *, provider: str, secrets: Iterable[str | None] = ()
) -> Failure:
    """The ``Failure`` for an exception raised by an SDK call or while reading its stream, its text
    scrubbed of ``secrets`` (the request's API key, which error bodies may echo) and of every other
    secret :func:`nbagent.redaction.scrub` knows."""
    failure = _failure(exc, provider=provider)
    return replace(failure, message=scrub(failure.message, secrets))


def _failure(exc: BaseException, *, provider: str) -> Failure:
    names = {cls.__name__ for cls in type(exc).__mro__}
    detail = _detail(exc)
    if "APITimeoutError" in names or "TimeoutException" in names or isinstance(exc, TimeoutError):
        return Failure(f"{provider}: request timed out ({detail})", code="TIMEOUT")
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and "APIStatusError" in names:
        detail = _status_detail(exc)
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        text = f"{detail} {_body_text(getattr(exc, 'body', None))}"
        kind = _error_type(getattr(exc, "body", None))
        if status < 400 and kind in _ERROR_TYPES:  # an error event inside a 200 stream
            code, status = _ERROR_TYPES[kind]
        else:
            code = code_for_status(status, text)
        if code != "CONTEXT_OVERFLOW" and is_context_overflow(text):
            code = "CONTEXT_OVERFLOW"
        return Failure(
            f"{provider}: HTTP {status}: {detail}",
            code=code,
            status=status,
            retry_after_ms=retry_after_ms(headers) if code in ("RATE_LIMIT", "SERVER") else None,
        )
    if "APIConnectionError" in names or "TransportError" in names or "RequestError" in names:
        return Failure(f"{provider}: connection failed: {detail}", code="TRANSPORT")
    if isinstance(exc, ConnectionError | EOFError) or "EndOfStream" in names:
        return Failure(f"{provider}: connection failed: {detail}", code="TRANSPORT")
    if "APIError" in names:  # an error object inside a stream (OpenAI-compatible servers)
        body = getattr(exc, "body", None)
        kind = _error_type(body) or str(getattr(exc, "code", None) or "")
        text = f"{detail} {_body_text(body)}"
        code, status = _ERROR_TYPES.get(kind, ("SERVER", None))
        if is_context_overflow(text):
            code = "CONTEXT_OVERFLOW"
        return Failure(f"{provider}: stream error: {detail}", code=code, status=status)
    return Failure(f"{provider}: {type(exc).__name__}: {detail}", code="UNKNOWN")


def missing_key_failure(provider: str, env_var: str) -> Failure:
    """The ``AUTH`` failure of a request made without an API key."""
    return Failure(
        f"{provider}: no API key: set the {env_var} environment variable "
        f"(or pass api_key=... to the model); keys are never stored in the session file",
        code="AUTH",
    )


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value.strip() if isinstance(value, str) else None


def _detail(exc: BaseException) -> str:
    text = getattr(exc, "api_message", None) or getattr(exc, "message", None) or str(exc)
    text = str(text).strip() or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({type(cause).__name__}: {cause})"
    return text


def _status_detail(exc: BaseException) -> str:
    """The provider's own error message; the SDK's wrapper text and causes are noise here."""
    err = _error_object(getattr(exc, "body", None))
    message = err.get("message") if err is not None else None
    if isinstance(message, str) and message.strip():
        return message.strip()
    return str(getattr(exc, "api_message", None) or getattr(exc, "message", None) or exc).strip()


def _error_object(body: Any) -> Mapping[str, Any] | None:
    if isinstance(body, Mapping):
        inner = body.get("error")
        return inner if isinstance(inner, Mapping) else body
    return None


def _error_type(body: Any) -> str | None:
    err = _error_object(body)
    if err is None:
        return None
    for key in ("type", "code"):
        value = err.get(key)
        if isinstance(value, str) and value in _ERROR_TYPES:
            return value
    value = err.get("type")
    return value if isinstance(value, str) else None


def _body_text(body: Any) -> str:
    err = _error_object(body)
    if err is None:
        return str(body or "")
    return " ".join(str(err.get(k) or "") for k in ("message", "code", "type"))
