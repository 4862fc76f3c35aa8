"""The built-in notebook tools in an in-process IPython shell (SPEC §9.4): what each shows, what it
leaves alone, and how a scripted model's calls land in the log."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from eventtrace import run, trace
from IPython.core.interactiveshell import InteractiveShell

import nbagent
from nbagent import context
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook.tools.cell_history import MAX_CELLS
from nbagent.notebook.tools.code_runner import STREAM_CHARS, run_code
from nbagent.notebook.tools.kernel_tools import TOOL_NAMES, KernelTools, NotebookTools
from nbagent.notebook.tools.namespace_view import MAX_VARIABLES, describe_text, list_variables_text
from nbagent.testing import check_invariants


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    sh = InteractiveShell.instance()
    sh.reset(new_session=True)
    yield sh
    sh.reset(new_session=True)


async def inline(fn: Any) -> Any:
    """Stands in for the kernel's main-thread hand-over: these tests run on the main thread."""
    return fn()


def cell(shell: InteractiveShell, code: str) -> Any:
    return shell.run_cell(code, store_history=True)


def listing(shell: InteractiveShell) -> str:
    return list_variables_text(shell.user_ns, shell.user_ns_hidden)


def names_in(text: str) -> list[str]:
    return [line.split(" · ")[0] for line in text.splitlines()[1:]]


# -- list_variables ---------------------------------------------------------------------------------


def test_list_variables_shows_the_users_names_with_type_size_and_a_one_line_preview(shell):
    cell(shell, "import json, os\nimport pandas as pd\n")
    cell(shell, "df = pd.DataFrame({'city': ['Oslo', 'Rome'], 'temp': [3.5, 18.0]})")
    cell(shell, "rows = list(range(1000))\nname = 'multi\\nline'\n_private = 1\ndef helper(x):\n    return x")
    cell(shell, "from nbagent.notebook.tools.approvals import Approvals\ndesk = Approvals()\nimport nbagent")
    cell(shell, "rows")  # Out, _, _3 and friends are IPython's
    assert listing(shell) == "\n".join(
        [
            "4 variables (name · type · shape/len · preview):",
            "df · DataFrame (pandas) · shape 2×2 · columns: city, temp",
            "rows · list · len 1000 · [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ...]",
            "name · str · len 10 · 'multi\\nline'",
            "helper · function · <function helper at 0x" + listing(shell).split("<function helper at 0x")[1],
        ]
    )


def test_list_variables_is_bounded_and_says_how_many_it_left_out(shell):
    for i in range(MAX_VARIABLES + 30):
        shell.user_ns[f"v{i}"] = "x" * 5000
    text = listing(shell)
    assert text.splitlines()[0].startswith(f"{MAX_VARIABLES + 30} variables")
    assert len(text) < 13_000
    assert text.splitlines()[-1].startswith("… and ") and "more not shown" in text.splitlines()[-1]
    assert all(len(line) < 200 for line in text.splitlines())


def test_list_variables_survives_a_value_whose_repr_raises(shell):
    cell(shell, "class Bad:\n    def __repr__(self):\n        raise RuntimeError('no')\nbad = Bad()")
    assert names_in(listing(shell)) == ["Bad", "bad"]
    assert listing(shell).splitlines()[2].startswith("bad · Bad · <Bad instance at 0x")


def test_an_empty_namespace_says_so(shell):
    assert listing(shell) == "The user's namespace has no variables yet."


# -- describe_variable ------------------------------------------------------------------------------


def without_capture_time(text: str) -> str:
    return re.sub(r' captured="[^"]*"', "", text)


def test_describe_variable_gives_a_dataframe_the_same_summary_as_inject(shell):
    df = pd.DataFrame({"city": ["Oslo", "Rome", None], "temp": [3.5, 18.0, 11.0]})
    shell.user_ns["df"] = df
    described = describe_text(shell.user_ns, shell.user_ns_hidden, "df")
    injected = context.dataframe(df, name="df").plain_text
    assert without_capture_time(described) == without_capture_time(injected)
    assert described.startswith('<dataframe name="df" library="pandas"')


def test_describe_variable_previews_other_objects(shell):
    shell.user_ns["config"] = {"lr": 0.1, "layers": [64, 64]}
    assert (
        describe_text(shell.user_ns, shell.user_ns_hidden, "config")
        == context.variable({"lr": 0.1, "layers": [64, 64]}, "config").plain_text
    )


def test_an_unknown_name_is_an_error_listing_close_matches(shell):
    cell(shell, "sales_2024 = 1\nsales_2023 = 2\nweather = 3")
    with pytest.raises(LookupError) as err:
        describe_text(shell.user_ns, shell.user_ns_hidden, "sales_2042")
    assert str(err.value) == (
        "no variable named 'sales_2042' in the user's namespace; close matches: sales_2024, sales_2023"
    )
    with pytest.raises(LookupError, match="the user's variables include: sales_2024, sales_2023, weather"):
        describe_text(shell.user_ns, shell.user_ns_hidden, "zzz")
    with pytest.raises(LookupError, match="is not a variable name"):
        describe_text(shell.user_ns, shell.user_ns_hidden, "weather + 1")
    with pytest.raises(LookupError, match="belongs to IPython"):
        describe_text(shell.user_ns, shell.user_ns_hidden, "In")


def test_describe_and_list_leave_the_namespace_and_the_frame_unchanged(shell):
    cell(
        shell, "import pandas as pd\ndf = pd.DataFrame({'a': [3, 1, None], 'b': list('xyz')})\nitems = [1, 2]"
    )
    before = {k: id(v) for k, v in shell.user_ns.items()}
    frame = shell.user_ns["df"].copy(deep=True)
    listing(shell)
    describe_text(shell.user_ns, shell.user_ns_hidden, "df")
    describe_text(shell.user_ns, shell.user_ns_hidden, "items")
    assert {k: id(v) for k, v in shell.user_ns.items()} == before
    pd.testing.assert_frame_equal(shell.user_ns["df"], frame)
    assert shell.user_ns["items"] == [1, 2]


# -- secrets and private names ----------------------------------------------------------------------

KEY = "sk-proj-" + "Qx7" * 14
CONFIGURED = "k3y.9f8e7d6c5b4a39281706"
"""A key of no known shape, known because it is configured (``OPENAI_API_KEY``)."""
HIDDEN = "value hidden: looks like a secret"


@pytest.fixture
def secrets_in(shell, monkeypatch) -> InteractiveShell:
    monkeypatch.setenv("OPENAI_API_KEY", CONFIGURED)
    shell.user_ns.update(
        OPENAI_API_KEY=KEY,
        db_password="hunter2 hunter2",
        credentials={"user": "alice", "password": ("a", "b"), "nested": {"api_token": "t0k-value"}},
        config={"endpoint": "https://example.org", "note": f"uses {CONFIGURED} now", "retries": 3},
        header=f"Authorization: Bearer {'z' * 300}",
        long_text=f"note: {KEY} " + "tail " * 100,
        _private_token="never",
        n_tokens=5,
        keys=["region", "units"],
        frame=pd.DataFrame({"who": ["a", "b"], "token": [KEY, "sk-ant-" + "w" * 30]}),
    )
    return shell


def test_list_variables_hides_secrets_by_name_and_by_shape_and_says_so(secrets_in):
    text = listing(secrets_in)
    for secret in (KEY, CONFIGURED, "hunter2", "t0k-value", "'a', 'b'", "z" * 20, "sk-ant-", "never"):
        assert secret not in text
    lines = {line.split(" · ")[0]: line for line in text.splitlines()[1:]}
    assert "_private_token" not in lines
    assert lines["OPENAI_API_KEY"] == f"OPENAI_API_KEY · str · len 50 · {HIDDEN} (its name, OPENAI_API_KEY)"
    assert lines["db_password"] == f"db_password · str · len 15 · {HIDDEN} (its name, db_password)"
    assert lines["credentials"] == f"credentials · dict · len 3 · {HIDDEN} (its name, credentials)"
    assert lines["config"] == (
        "config · dict · len 3 · {'endpoint': 'https://example.org', 'note': 'uses <value hidden: looks "
        "like a secret> now', 'retrie…"
    )
    assert lines["header"] == f"header · str · len 322 · 'Authorization: Bearer <{HIDDEN}>'"
    assert (
        lines["n_tokens"] == "n_tokens · int · 5"
        and lines["keys"] == "keys · list · len 2 · ['region', 'units']"
    )


def test_describe_variable_hides_secrets_inside_dicts_and_strings_and_keeps_the_rest(secrets_in):
    def described(name: str) -> str:
        return describe_text(secrets_in.user_ns, secrets_in.user_ns_hidden, name)

    assert (
        described("OPENAI_API_KEY") == f"OPENAI_API_KEY · str · len 50 · {HIDDEN} (its name, OPENAI_API_KEY)"
    )
    secrets_in.user_ns["settings"] = {"user": "alice", "password": "pw pw", "db": {"api_token": "t0k-value"}}
    assert described("settings") == (
        '<variable name="settings" type="builtins.dict" len="3">\n'
        f"{{'user': 'alice', 'password': <{HIDDEN}>, 'db': {{'api_token': <{HIDDEN}>}}}}\n"
        "</variable>"
    )
    assert f"'uses <{HIDDEN}> now'" in described("config")
    long_text = described("long_text")
    assert long_text.startswith('<variable name="long_text" type="builtins.str" len="557">')
    assert f"\nnote: <{HIDDEN}> tail tail" in long_text and KEY[:12] not in long_text
    frame = described("frame")
    assert frame.startswith('<dataframe name="frame"') and KEY not in frame and "sk-ant-" not in frame
    for name in ("config", "header", "credentials", "db_password", "frame"):
        assert all(s not in described(name) for s in (KEY, CONFIGURED, "hunter2", "z" * 20, "t0k-value"))


def test_a_key_inside_an_objects_long_repr_is_hidden_before_the_preview_shortens_it(shell):
    cell(
        shell,
        "from dataclasses import dataclass\n@dataclass\nclass Settings:\n    a: str\n    api: str\n    b: str",
    )
    # 2,010 characters of repr: a preview keeps its first and last 1,000, cut inside the key
    cell(shell, f"settings = Settings('x' * 960, {KEY!r}, 'y' * 977)")
    text = listing(shell) + describe_text(shell.user_ns, shell.user_ns_hidden, "settings")
    assert not any(KEY[i : i + 6] in text for i in range(len(KEY) - 6))
    assert f"api='<{HIDDEN}>'" in text


def test_private_names_are_not_described(secrets_in):
    with pytest.raises(LookupError) as err:
        describe_text(secrets_in.user_ns, secrets_in.user_ns_hidden, "_private_token")
    assert str(err.value) == (
        "'_private_token' is a private name (it starts with '_'); nbagent does not show private names "
        "(see list_variables)"
    )


def test_recent_cells_hides_a_key_typed_in_a_cell(shell):
    tools = KernelTools(shell, on_main=inline)
    tools.history.listen()
    try:
        cell(shell, f"OPENAI_API_KEY = {KEY!r}\nlen(OPENAI_API_KEY)")
        result = asyncio.run(tools.tools[2].invoke({"count": 1}, None))
    finally:
        tools.history.unlisten()
    assert result.content == f"In [1]:\nOPENAI_API_KEY = '<{HIDDEN}>'\nlen(OPENAI_API_KEY)\nOut [1]: 50"


# -- recent_cells -----------------------------------------------------------------------------------


def test_recent_cells_shows_sources_results_and_errors_oldest_first(shell):
    tools = KernelTools(shell, on_main=inline)
    tools.history.listen()
    try:
        cell(shell, "x = 40")
        cell(shell, "x + 2")
        cell(shell, "x / 0")
        cell(shell, "print('printed only')")
        assert tools.history.recent(3) == "\n\n".join(
            [
                "In [2]:\nx + 2\nOut [2]: 42",
                "In [3]:\nx / 0\nError [3]: ZeroDivisionError: division by zero",
                "In [4]:\nprint('printed only')",
            ]
        )
    finally:
        tools.history.unlisten()


def test_recent_cells_bounds_the_count_and_each_cell(shell):
    tools = KernelTools(shell, on_main=inline)
    for i in range(MAX_CELLS + 5):
        cell(shell, f"v = {i}")
    text = tools.history.recent(100)
    assert text.count("In [") == MAX_CELLS
    assert text.endswith(f"(only the last {MAX_CELLS} cells are returned)")
    for i in range(MAX_CELLS + 5, 2 * MAX_CELLS):
        cell(shell, f"w = {i}  # " + "y" * 5000)
    text = tools.history.recent(MAX_CELLS)
    assert len(text) < 13_000
    assert text.startswith("(13 older cells left out to keep this short)\n\nIn [34]:\nw = 33  # yyy")
    assert text.count("In [") == 7
    assert text.rstrip("y…").endswith(f"In [{2 * MAX_CELLS}]:\nw = {2 * MAX_CELLS - 1}  # ")
    with pytest.raises(ValueError, match="count must be 1 or more"):
        tools.history.recent(0)


# -- run_code ---------------------------------------------------------------------------------------


def test_run_code_returns_stdout_stderr_and_the_final_value_and_keeps_its_names(shell):
    report = run_code(
        "import sys\nprint('hello')\nprint('careful', file=sys.stderr)\nanswer = 6 * 7\nanswer",
        shell.user_ns,
        transform=shell.transform_cell,
    )
    assert report.text() == "stdout:\nhello\n\nstderr:\ncareful\n\nresult:\n42"
    assert shell.user_ns["answer"] == 42
    cell(shell, "check = answer + 1")
    assert shell.user_ns["check"] == 43


def test_run_code_reports_the_traceback_of_the_models_code_only(shell):
    report = run_code("def f(n):\n    return 1 / n\n\nf(0)", shell.user_ns)
    assert report.error is not None
    assert report.error.startswith("Traceback (most recent call last):\n")
    assert "line 4, in <module>\n    f(0)" in report.error
    assert "line 2, in f\n    return 1 / n" in report.error
    assert report.error.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "code_runner" not in report.error


@pytest.mark.parametrize(
    ("code", "ending"),
    [
        ("raise SystemExit(3)", "SystemExit: 3"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        ("def broken(:\n  pass", "SyntaxError: invalid syntax"),
    ],
)
def test_nothing_the_code_raises_escapes_run_code(shell, code, ending):
    report = run_code(code, shell.user_ns)
    assert report.error is not None and report.error.rstrip().endswith(ending)


def test_run_code_bounds_what_it_keeps_of_huge_output(shell):
    report = run_code("for i in range(200_000):\n    print(i)\nlist(range(10**6))", shell.user_ns)
    assert len(report.stdout) < STREAM_CHARS + 100
    assert report.stdout.startswith("0\n1\n2\n")
    assert report.stdout.rstrip().endswith("199999")
    assert "characters omitted" in report.stdout
    assert report.result is not None and len(report.result) <= 4000


def test_run_code_understands_ipython_syntax_but_refuses_to_drive_nbagent(shell):
    report = run_code("here = %pwd\nlen(here) > 0", shell.user_ns, transform=shell.transform_cell)
    assert report.result == "True"
    refused = run_code("%agent status", shell.user_ns, transform=shell.transform_cell)
    assert refused.error is not None and refused.error.startswith("refused: run_code cannot use nbagent's")


# -- through an agent -------------------------------------------------------------------------------


def results(agent: nbagent.Agent) -> dict[str, tuple[str, str | None]]:
    """call id → (result text, error code)."""
    out = {}
    for e in agent.events:
        if e.type == "tool/result":
            block = e.data["message"]["content"][0]
            out[block["tool_call_id"]] = (block["content"][0]["text"], e.data.get("error", {}).get("code"))
    return out


def test_a_scripted_model_calls_each_builtin_tool(shell, db):
    cell(shell, "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})")
    calls = [
        ToolCall("list_variables", {}, id="l"),
        ToolCall("describe_variable", {"name": "df"}, id="d"),
        ToolCall("describe_variable", {"name": "dff"}, id="u"),
        ToolCall("recent_cells", {"count": 1}, id="r"),
    ]
    model = ScriptedModel(
        [
            Response(tool_calls=calls),
            Response(
                tool_calls=[ToolCall("run_code", {"code": "df['b'] = df.a * 2\nint(df.b.sum())"}, id="c")]
            ),
            "done",
        ]
    )

    async def main() -> nbagent.Agent:
        agent = nbagent.open_session(db, model=model)
        builtins = NotebookTools(shell, on_main=inline)
        builtins.equip(agent)
        assert tuple(agent.tools) == TOOL_NAMES
        agent.approver.policy = "session"
        await agent.run("look at df")
        await agent.close()
        builtins.close()
        return agent

    agent = run(main())
    lines = [x for x in trace(agent.events) if not x.startswith(("RH", "CH"))]
    assert lines[lines.index("SS 1.1") :] == [
        "SS 1.1",
        "UM look at df",
        "AM 1.1 ['l', 'd', 'u', 'r']",
        "TC l",
        "TC d",
        "TC u",
        "TC r",
        "TR l",
        "TR d",
        "TR u UNKNOWN_VARIABLE",
        "TR r",
        "SE 1.1",
        "SS 1.2",
        "AM 1.2 ['c']",
        "TC c",
        "approval/asked",
        "approval/decided",
        "TR c",
        "SE 1.2",
        "SS 1.3",
        "AM 1.3 'done'",
        "SE 1.3",
        "TE 1 completed",
    ]
    out = results(agent)
    assert (
        out["l"][0]
        == "1 variable (name · type · shape/len · preview):\ndf · DataFrame (pandas) · shape 3×1 · columns: a"
    )
    assert out["d"][0].startswith('<dataframe name="df"')
    assert out["u"][0] == "Error: no variable named 'dff' in the user's namespace; close matches: df"
    assert out["r"][0] == "In [1]:\nimport pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})"
    assert out["c"] == ("result:\n12", None)
    assert list(shell.user_ns["df"].columns) == ["a", "b"]
    check_invariants(agent.events, requests=model.requests)


def test_a_tool_body_that_fails_becomes_an_error_result_not_an_exception(shell, db):
    def broken_on_main(fn: Any) -> Any:
        async def go() -> Any:
            raise RuntimeError("the main thread is gone")

        return go()

    tools = {t.name: t for t in KernelTools(shell, on_main=broken_on_main).tools}
    model = ScriptedModel([Response(tool_calls=[ToolCall("list_variables", {}, id="l")]), "ok"])

    async def main() -> nbagent.Agent:
        agent = nbagent.open_session(db, model=model, tools=[tools["list_variables"]])
        await agent.run("go")
        await agent.close()
        return agent

    agent = run(main())
    assert results(agent)["l"] == ("Error: RuntimeError: the main thread is gone", "TOOL_ERROR")


def test_tools_off_withdraws_the_builtins_and_on_offers_them_again(shell, db):
    async def main() -> list[Any]:
        model = ScriptedModel(["one", "two"])
        agent = nbagent.open_session(db, model=model)
        builtins = NotebookTools(shell, on_main=inline)
        builtins.equip(agent)
        assert builtins.set_enabled(agent, False) == list(TOOL_NAMES)
        await agent.run("first")
        assert builtins.set_enabled(agent, True) == list(TOOL_NAMES)
        await agent.run("second")
        await agent.close()
        builtins.close()
        return [[t["name"] for t in r.tools] for r in model.requests]

    assert run(main()) == [[], list(TOOL_NAMES)]


def test_run_code_that_was_approved_but_cancelled_before_it_started_does_not_run(shell, db):
    started = asyncio.Event()

    async def main() -> nbagent.Agent:
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def held_main(fn: Any) -> Any:
            started.set()
            await gate  # the main thread is busy with a long cell
            return fn()

        builtins = NotebookTools(shell, on_main=held_main)
        model = ScriptedModel([Response(tool_calls=[ToolCall("run_code", {"code": "ran = True"}, id="c")])])
        agent = nbagent.open_session(db, model=model)
        builtins.equip(agent)
        agent.approver.policy = "session"
        agent.followup("go")
        await started.wait()
        agent.cancel()
        gate.set_result(None)
        await agent.when_idle()
        await agent.close()
        builtins.close()
        return agent

    agent = run(main())
    assert "ran" not in shell.user_ns
    assert results(agent)["c"][1] == "ABORTED"
