"""Secrets kept out of what nbagent stores and shows: one place that knows what a secret looks like.

Two uses: failure texts (a provider's error body may echo the API key it was sent) are scrubbed before
they are logged or recorded, and the notebook tools' previews of the user's variables hide values
that look like secrets before the model sees them. A secret is recognised by its value (a configured
key, from the environment or passed in; or a well-known token shape such as ``sk-…`` or
``Bearer …``) or by its name (``api_key``, ``db_password``, ``credentials``…).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from nbagent.redaction_known import from_base64, known_removed

REDACTED = "[redacted]"
"""What a secret in a failure text becomes."""

MIN_KNOWN = 8
"""Configured values shorter than this are not treated as secrets (too likely to be ordinary text)."""

_SHAPES = re.compile(
    "|".join(
        (
            r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic, DeepSeek…
            r"(?P<bearer>(?i:\bbearer\s+))[A-Za-z0-9\-._~+/]{12,}=*",  # an Authorization header's
            r"(?P<basic>(?i:\bbasic\s+))(?P<userinfo>[A-Za-z0-9+/]{8,}={0,2})",  # base64(user:password)
            r"\bgh[oprsu]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}",  # GitHub
            r"\bglpat-[A-Za-z0-9_\-]{20,}",  # GitLab
            r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
            r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API key
            r"\b(?:hf|gsk|pplx|xai|r8)_[A-Za-z0-9]{20,}",  # Hugging Face, Groq, Perplexity, xAI, Replicate
            r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # a JWT
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
        )
    )
)

_URL_PASSWORD = re.compile(r"(?<=://)([^/\s:@]+):([^\s]+?)(?=@[^/\s@]*(?:[/?#\s\"'<>]|$))")
"""``scheme://user:password@host``: the password goes, the user stays. The password runs to the last
``@`` before the host (a password with an unescaped ``@`` goes whole)."""

_ASSIGNED = re.compile(
    r"(?P<name>\b[A-Za-z_][A-Za-z0-9_\-]*)(?P<sep>\s*=\s*|[\"']\s*:\s*)"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.)+)\"?|'(?P<sq>(?:[^'\\\n]|\\.)+)'?|(?P<bare>[^\s\"',;&()={}\[\]]{4,}))"
)
"""``name=value`` and ``"name": "value"`` pairs (a quoted value up to its closing quote, or to the end
of the line when a preview cut it off); the value goes when the name looks like a secret's."""

_TRIGGERS = re.compile(
    r"sk-|bearer|basic|gh[oprsu]_|github_pat_|glpat-|xox|AKIA|ASIA|AIza|_[A-Za-z0-9]{20}|eyJ|PRIVATE KEY|://|[=:]",
    re.IGNORECASE,
)
"""What any of the patterns above needs: text without it holds no secret they would find."""

_NAME_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SECRET_PART = re.compile(
    r"[a-z]*(?:password|passwords|passwd|secret|secrets|credential|credentials|apikey|passphrase"
    r"|authorization)"
    r"|(?:api|access|private|auth|session|refresh|bearer|client|app|master|signing|encryption|db)?"
    r"(?:key|token|pwd|pw|pass|cookie|cookies)"
)


_ABBREVIATED = frozenset({"pwd", "pw", "pass"})
"""Secret words that, alone, usually mean something else: ``PWD`` is the shell's working directory
(POSIX), ``pass`` a verb. They count only beside another word (``MYSQL_PWD``, ``db_pass``)."""

_NOT_THE_SECRET = frozenset(
    {
        *("file", "files", "path", "paths", "dir", "directory", "home", "location", "store", "socket"),
        *("sock", "url", "uri", "endpoint", "host", "port", "name", "names", "id", "ids", "type"),
        *("kind", "length", "len", "size", "count", "limit", "timeout", "ttl", "expiry", "expires"),
        *("env", "var", "options", "opts", "scope", "scopes", "header", "prefix", "format", "mode"),
    }
)
"""Last words that make a secret word describe something about the secret, not hold it:
``SSL_KEY_FILE``, ``PASSWORD_STORE_DIR``, ``TOKEN_URL``, ``AWS_ACCESS_KEY_ID``, ``api_key_env``."""


@lru_cache(maxsize=4096)
def looks_secret_name(name: str) -> bool:
    """Whether a name says it holds a secret: one of its words (``snake_case``, ``camelCase`` or
    ``UPPER_CASE``) is key, token, secret, password, passwd, credential… (``api_key``,
    ``dbPassword``, ``OPENAI_API_KEY``; not ``keyboard``, ``monkey`` or ``tokens``). Not a secret:
    ``PWD`` alone (the working directory), nor a name ending in a word such as ``file``, ``path``,
    ``dir``, ``url`` or ``id`` (``SSL_KEY_FILE``, ``AWS_ACCESS_KEY_ID``): they say where or which."""
    words = [part.lower() for part in _NAME_PARTS.findall(name)]
    if not words or (len(words) > 1 and words[-1] in _NOT_THE_SECRET):
        return False
    return any(
        _SECRET_PART.fullmatch(word) and (len(words) > 1 or word not in _ABBREVIATED) for word in words
    )


def configured_secrets() -> list[str]:
    """The values of environment variables whose names look like secrets' (``OPENAI_API_KEY``,
    ``PGPASSWORD``…): what a provider or a database may echo back."""
    return [
        value for name, value in os.environ.items() if len(value) >= MIN_KNOWN and looks_secret_name(name)
    ]


def has_secret_shape(text: str) -> bool:
    """Whether ``text`` holds a well-known token shape (``sk-…``, ``Bearer …``, a JWT, a private key…)."""
    return _SHAPES.search(text) is not None


def scrub(
    text: str, known: Iterable[str | None] = (), *, marker: str = REDACTED, environment: bool = True
) -> str:
    """``text`` with every secret replaced by ``marker``: the ``known`` values (a model's API key),
    the configured ones (:func:`configured_secrets`, unless ``environment`` is false because the
    caller passes them in ``known``), token shapes, URL passwords and the values of ``name=value``
    pairs whose name looks like a secret's.

    A known value goes also in part (any run of ``redaction_known.FRAGMENT`` or more of its characters: an error
    body that echoes a key's first 20), written as ``\\uXXXX`` escapes, or inside base64 text
    (``base64(user:key)``)."""
    configured = configured_secrets() if environment else ()
    values = sorted({v for v in (*known, *configured) if v and len(v) >= MIN_KNOWN}, key=len, reverse=True)
    if values:
        text = known_removed(text, values, marker)
    if _TRIGGERS.search(text) is None:
        return text
    text = _SHAPES.sub(_hide_shape(marker), text)
    text = _URL_PASSWORD.sub(lambda m: f"{m[1]}:{marker}", text)
    return _ASSIGNED.sub(_hide_assigned(marker), text)


def _hide_shape(marker: str) -> Callable[[re.Match[str]], str]:
    def hide(match: re.Match[str]) -> str:
        if match["basic"] is not None and not _is_userinfo(match["userinfo"]):
            return match[0]  # "Basic authentication": a word, not base64(user:password)
        return (match["bearer"] or match["basic"] or "") + marker

    return hide


def _is_userinfo(text: str) -> bool:
    decoded = from_base64(text)
    return decoded is not None and ":" in decoded


def _hide_assigned(marker: str) -> Callable[[re.Match[str]], str]:
    def hide(match: re.Match[str]) -> str:
        group = "dq" if match["dq"] is not None else "sq" if match["sq"] is not None else "bare"
        if match.string.startswith(marker, match.start(group)) or not looks_secret_name(match["name"]):
            return match[0]
        quote = {"dq": '"', "sq": "'", "bare": ""}[group]
        return f"{match['name']}{match['sep']}{quote}{marker}{quote}"

    return hide
