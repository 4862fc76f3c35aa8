"""Secrets in the forms the redaction missed before (issue 32, item 8): a key echoed in part, as
base64(user:key) or as ``\\uXXXX`` escapes by an error body, or whole by a 200 answer; a model URL with
a password and an ``api_key``; a PostgreSQL URL whose password holds an ``@``; and values the notebook
tools showed (secret DataFrame columns, an ``Authorization`` header, ``("password", …)`` pairs, an
object's ``token=`` cut short or holding a quote)."""

from __future__ import annotations

import asyncio
import base64
import logging
import types
from pathlib import Path

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from provider_servers import Error, ProviderServer, Stream, oa_text_stream

import nbagent
from nbagent.core.retry import RetryPolicy
from nbagent.errors import SessionFileError
from nbagent.models import resolve_model
from nbagent.models.openai_compat import OpenAICompatModel
from nbagent.notebook.tools.kernel_tools import KernelTools
from nbagent.notebook.tools.namespace_view import describe_text, list_variables_text
from nbagent.redaction import REDACTED, scrub
from nbagent.store.location import parse_location
from nbagent.views.markdown import transcript

pytestmark = pytest.mark.usefixtures("provider_env")

KEY = "k3y.9f8e7d6c5b4a39281706-0a1b2c3d4e5f"
"""A key of no known shape: only knowing the configured value can catch it."""
HIDDEN = "<value hidden: looks like a secret>"

FORMS = {
    "prefix-20": KEY[:20],
    "prefix-28": KEY[:28],
    "base64-user-key": base64.b64encode(f"alice:{KEY}".encode()).decode(),
    "u-escapes": "".join(f"\\u{ord(c):04x}" for c in KEY),
    "U-escapes-mixed": KEY[:5] + "".join(f"\\u{ord(c):04X}" for c in KEY[5:]),
}


def stored_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


def leaked(text: str) -> bool:
    """Whether ``text`` holds 8 characters in a row of the key, in any of the forms above."""
    return any(KEY[i : i + 8] in text for i in range(len(KEY) - 8)) or any(
        form in text for form in FORMS.values()
    )


@pytest.mark.parametrize("form", sorted(FORMS))
async def test_an_error_body_echoing_the_key_in_another_form_is_scrubbed(
    server: ProviderServer, db: Path, caplog, monkeypatch, form: str
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("NBAGENT_API_KEY", KEY)
    echoed = FORMS[form]
    server.reply(Error(401, {"error": {"message": f"Incorrect API key provided: {echoed}.", "code": "k"}}))
    model = OpenAICompatModel("m", provider="openai-compatible", base_url=f"{server.url}/v1")
    agent = nbagent.open_session(db, model=model, retry=RetryPolicy(max_retries=0))
    run = await agent.run("hi")
    shown = transcript(agent.events)
    await agent.close()
    message = run.end["reason"]["error"]["message"]
    assert message.endswith(f"Incorrect API key provided: {REDACTED}."), message
    assert not leaked(message) and not leaked(shown) and not leaked(caplog.text)
    assert KEY[:12].encode() not in stored_bytes(db)
    assert echoed.encode() not in stored_bytes(db)


async def test_a_200_answer_echoing_the_key_is_stored_without_it(
    server: ProviderServer, db: Path, monkeypatch
) -> None:
    monkeypatch.setenv("NBAGENT_API_KEY", KEY)
    server.reply(Stream(oa_text_stream("you sent ", f"Bearer {KEY} and ", KEY[:20], " — password = x")))
    model = OpenAICompatModel("m", provider="openai-compatible", base_url=f"{server.url}/v1")
    agent = nbagent.open_session(db, model=model, retry=RetryPolicy(max_retries=0))
    run = await agent.run("hi")
    shown = transcript(agent.events)
    await agent.close()
    assert run.outcome == "completed"
    assert run.text == f"you sent Bearer {REDACTED} and {REDACTED} — password = x"
    assert not leaked(shown) and KEY[:12].encode() not in stored_bytes(db)


def test_a_model_url_with_a_password_and_an_api_key_is_never_echoed() -> None:
    spec = "openai-compatible:m@http://user:pw-s3cret-1@host/v1?api_key=q-s3cret-2"
    model = resolve_model(spec)
    assert model.base_url == "http://user:pw-s3cret-1@host/v1?api_key=q-s3cret-2"  # what the SDK gets
    assert model.name == f"openai-compatible:m@http://user:{REDACTED}@host/v1?api_key={REDACTED}"
    assert "s3cret" not in repr(model)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nbagent")
    for bad in (spec.replace("http://", "ftp://"), "nosuchprovider:m@http://user:pw-s3cret-1@h/v1"):
        with pytest.raises(UsageError) as err:
            shell.run_line_magic("agent", f"model {bad}")
        assert "s3cret" not in str(err.value), str(err.value)


def test_a_postgresql_url_with_an_unescaped_at_in_its_password_is_refused_without_showing_it() -> None:
    for url in (
        "postgresql://bob:p@ss@w0rd@db.example:5432/x",
        "postgres://bob:tail@part@db/x?sslmode=require",
    ):
        with pytest.raises(SessionFileError) as err:
            parse_location(url)
        assert "ss@w0rd" not in str(err.value) and "w0rd" not in str(err.value)
        assert "part" not in str(err.value) and "%40" in str(err.value)
    assert parse_location("postgresql://bob:p%40ss@db/x").url == "postgresql://bob:p%40ss@db/x"
    assert scrub("postgresql://bob:p@ss@w0rd@db.example/x") == f"postgresql://bob:{REDACTED}@db.example/x"


@pytest.fixture
def shell() -> InteractiveShell:
    sh = InteractiveShell.instance()
    sh.reset(new_session=True)
    yield sh
    sh.reset(new_session=True)


def test_the_notebook_tools_hide_secret_columns_headers_pairs_and_object_fields(shell) -> None:
    basic = base64.b64encode(b"alice:s3cr3t-pw-0042").decode()
    many = pd.DataFrame(
        {"who": [f"u{i}" for i in range(80)], "password": [f"hunter{i:04d}x" for i in range(80)]}
    )
    shell.user_ns.update(
        users=pd.DataFrame({"who": ["a"], "password": ["hunter2-pass"], "api_token": ["tok-abcdef-1234"]}),
        many=many,
        hdrs={"Authorization": f"Basic {basic}"},
        header_text=f"Authorization: Basic {basic}",
        pairs=[("password", "hunter2-pass"), ("user", "alice")],
        ns=types.SimpleNamespace(token="it's-a-s3cr3t-value"),
    )
    texts = [list_variables_text(shell.user_ns, shell.user_ns_hidden)]
    texts += [
        describe_text(shell.user_ns, shell.user_ns_hidden, n)
        for n in ("users", "many", "hdrs", "pairs", "ns")
    ]
    texts.append(describe_text(shell.user_ns, shell.user_ns_hidden, "header_text"))
    everything = "\n".join(texts)
    for secret in ("hunter", "tok-abcdef", basic, "s3cr3t"):
        assert secret not in everything, secret
    assert "| a | " + HIDDEN + " | " + HIDDEN + " |" in texts[1]
    assert "password" in texts[2] and "u0" in texts[2]  # the column is named, its values are not shown
    assert "('user', 'alice')" in texts[4] and f"('password', {HIDDEN})" in texts[4]
    assert scrub("we use Basic authentication here") == "we use Basic authentication here"


def test_recent_cells_hides_an_objects_token_cut_short_or_holding_a_quote(shell) -> None:
    async def inline(fn):
        return fn()

    tools = KernelTools(shell, on_main=inline)
    tools.history.listen()
    try:
        shell.run_cell(
            "import types\nlong = types.SimpleNamespace(token='x' * 900)\nlong", store_history=True
        )
        shell.run_cell('quoted = types.SimpleNamespace(token="it\'s-a-s3cr3t")\nquoted', store_history=True)
        text = asyncio.run(tools.tools[2].invoke({"count": 2}, None)).content
    finally:
        tools.history.unlisten()
    assert "xxxxxxxx" not in text and "s3cr3t" not in text, text
    assert f"namespace(token='{HIDDEN}')" in text or f'namespace(token="{HIDDEN}")' in text
