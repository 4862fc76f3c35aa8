"""``read_notebook`` (SPEC §9.7): the saved notebook's cells in order, bounded; and in a real kernel
serving a real saved notebook."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from kernel_helpers import KERNELS, Kernel, read_events

from nbagent.notebook.tools.notebook_reader import TOTAL_CHARS, read_notebook_text


def saved(path: Path, cells: list[nbformat.NotebookNode]) -> str:
    """Write a notebook with ``cells`` to ``path``; return its time as the result shows it."""
    notebook = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(notebook, str(path))
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime))


def sample_cells() -> list[nbformat.NotebookNode]:
    v4 = nbformat.v4
    return [
        v4.new_markdown_cell("# Sales\nQuarterly numbers."),
        v4.new_code_cell(
            "total = 3 + 4\nprint('hi')\ntotal",
            execution_count=1,
            outputs=[
                v4.new_output("stream", name="stdout", text="hi\n"),
                v4.new_output("execute_result", data={"text/plain": "7"}, execution_count=1),
            ],
        ),
        v4.new_code_cell(
            "1 / 0",
            execution_count=2,
            outputs=[
                v4.new_output(
                    "error", ename="ZeroDivisionError", evalue="\x1b[31mdivision by zero\x1b[0m", traceback=[]
                )
            ],
        ),
        v4.new_code_cell(
            "plot()", execution_count=3, outputs=[v4.new_output("display_data", data={"image/png": "iVBOR"})]
        ),
        v4.new_code_cell("not_yet()"),
    ]


def test_the_cells_come_in_order_with_counts_and_output_text(tmp_path):
    path = tmp_path / "sales.ipynb"
    when = saved(path, sample_cells())
    result = read_notebook_text(path)
    assert not result.is_error
    assert result.content == (
        f"Notebook sales.ipynb, as saved at {when} (5 cells; edits not saved since then are not included)\n\n"
        "[1] markdown\n# Sales\nQuarterly numbers.\n\n"
        "[2] code · In [1]\ntotal = 3 + 4\nprint('hi')\ntotal\nOutput:\nhi\n\n7\n\n"
        "[3] code · In [2]\n1 / 0\nOutput:\nZeroDivisionError: division by zero\n\n"
        "[4] code · In [3]\nplot()\nOutput:\n[image/png output]\n\n"
        "[5] code · not run\nnot_yet()"
    )


def test_outputs_can_be_left_out(tmp_path):
    path = tmp_path / "sales.ipynb"
    saved(path, sample_cells())
    text = read_notebook_text(path, include_outputs=False).content
    assert "Output:" not in text and "[2] code · In [1]\ntotal = 3 + 4" in text


def test_a_secret_printed_in_an_output_is_hidden(tmp_path):
    path = tmp_path / "keys.ipynb"
    key = "sk-" + "a1b2c3d4" * 4
    output = nbformat.v4.new_output("stream", name="stdout", text=f"using {key}\n")
    saved(path, [nbformat.v4.new_code_cell("print(key)", execution_count=1, outputs=[output])])
    text = read_notebook_text(path).content
    assert key not in text and "using " in text


def test_a_long_notebook_is_cut_and_says_where_to_read_on(tmp_path):
    path = tmp_path / "long.ipynb"
    saved(path, [nbformat.v4.new_code_cell(f"cell_{i} = '{'x' * 900}'") for i in range(40)])
    first = read_notebook_text(path).content
    assert len(first) <= TOTAL_CHARS + 200
    cut = first.rsplit("\n\n", 1)[1]
    assert cut.startswith("(cells ") and "read_notebook(start=" in cut
    start = int(cut.split("start=")[1].split(")")[0])
    later = read_notebook_text(path, start=start).content
    assert f"[{start}] code · not run\ncell_{start - 1} = " in later


def test_no_notebook_file_gives_a_clear_result(tmp_path):
    unknown = read_notebook_text(None)
    assert unknown.is_error and unknown.code == "NO_NOTEBOOK"
    assert "not told which notebook" in unknown.content
    unsaved = read_notebook_text(tmp_path / "draft.ipynb")
    assert unsaved.is_error and "draft.ipynb has not been saved yet" in unsaved.content
    (tmp_path / "broken.ipynb").write_text("{not json")
    broken = read_notebook_text(tmp_path / "broken.ipynb")
    assert broken.is_error and broken.content.startswith(f"Error: cannot read the notebook {tmp_path}")


@pytest.mark.kernel
def test_in_a_kernel_the_model_reads_the_saved_notebook_it_runs_in(tmp_path):
    when = saved(tmp_path / "work.ipynb", sample_cells())
    with Kernel(tmp_path, "work.ipynb") as kernel:
        kernel.run("%load_ext nbagent")
        kernel.run(
            "from nbagent.models import Response, ScriptedModel, ToolCall\n"
            "from nbagent.notebook import current_agent\n"
            "current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall('read_notebook', "
            "{'include_outputs': True}, id='r1')]), 'read it']))\n"
        )
        kernel.run("%followup --wait what is in this notebook?")
        events = read_events(tmp_path / "work.nbagent.sqlite")
    header = next(e for e in events if e.type == "request/header")
    assert "read_notebook" in {t["name"] for t in header.data["tools"]}
    (result,) = [e for e in events if e.type == "tool/result"]
    text = result.data["message"]["content"][0]["content"][0]["text"]
    assert text.startswith(f"Notebook work.ipynb, as saved at {when} (5 cells;")
    assert "[1] markdown\n# Sales" in text and "[5] code · not run\nnot_yet()" in text
    assert not [e for e in events if e.type == "approval/asked"]


@pytest.mark.kernel
def test_in_a_kernel_whose_notebook_was_never_saved_the_result_says_so(tmp_path):
    with Kernel(tmp_path, "draft.ipynb") as kernel:
        kernel.run("%load_ext nbagent")
        kernel.run(
            "from nbagent.models import Response, ScriptedModel, ToolCall\n"
            "from nbagent.notebook import current_agent\n"
            "current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall('read_notebook', "
            "{}, id='r1')]), 'ok']))\n"
        )
        kernel.run("%followup --wait read it")
        events = read_events(tmp_path / "draft.nbagent.sqlite")
    (result,) = [e for e in events if e.type == "tool/result"]
    text = result.data["message"]["content"][0]["content"][0]["text"]
    assert (
        text
        == f"Error: the notebook draft.ipynb has not been saved yet (no file at {tmp_path / 'draft.ipynb'})"
    )
    assert result.data["error"]["code"] == "NO_NOTEBOOK"


def serve_front_end(kernel: Kernel, code: str, answer: dict[str, object] | None) -> list[dict[str, object]]:
    """Execute ``code`` while acting as the front end: answer each ``nbagent.notebook`` comm the kernel
    opens with ``answer`` (or close it when ``None``); return the comm_open messages' contents."""
    msg_id = kernel.send(code)
    opened: list[dict[str, object]] = []
    while True:
        msg = kernel.kc.iopub_channel.get_msg(timeout=60)
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_open" and content.get("target_name") == "nbagent.notebook":
            opened.append(content)
            reply_type = "comm_msg" if answer is not None else "comm_close"
            data = answer if answer is not None else {}
            reply = kernel.kc.session.msg(reply_type, {"comm_id": content["comm_id"], "data": data})
            kernel.kc.shell_channel.send(reply)
        if (
            kind == "status"
            and content["execution_state"] == "idle"
            and msg["parent_header"].get("msg_id") == msg_id
        ):
            return opened


LIVE = {
    "path": "work.ipynb",
    "dirty": True,
    "cells": [
        {"cell_type": "markdown", "source": "# Draft, not saved", "execution_count": None, "outputs": []},
        {
            "cell_type": "code",
            "source": "x = 41 + 1\nx",
            "execution_count": 7,
            "outputs": [
                {"output_type": "execute_result", "data": {"text/plain": "42"}, "execution_count": 7}
            ],
        },
    ],
}


@pytest.mark.kernel
@pytest.mark.parametrize("kernel_python", KERNELS)
@pytest.mark.parametrize("front_end", ["answers", "closes"])
def test_in_a_kernel_a_front_end_that_answers_gives_the_live_document(tmp_path, front_end, kernel_python):
    when = saved(tmp_path / "work.ipynb", sample_cells())
    with Kernel(tmp_path, "work.ipynb", python=kernel_python) as kernel:
        kernel.run("%load_ext nbagent")
        kernel.run(
            "from nbagent.models import Response, ScriptedModel, ToolCall\n"
            "from nbagent.notebook import current_agent\n"
            "current_agent().set_model(ScriptedModel([Response(tool_calls=[ToolCall('read_notebook', "
            "{}, id='r1')]), 'read it']))\n"
        )
        if front_end == "answers":  # a loaded machine answers late; this test's front end always answers
            kernel.run(
                "import nbagent.notebook.tools.front_end_cells as front_end_cells\nfront_end_cells.TIMEOUT = 60"
            )
        opened = serve_front_end(kernel, "%followup --wait read it", LIVE if front_end == "answers" else None)
        events = read_events(tmp_path / "work.nbagent.sqlite")
    assert [o["data"] for o in opened] == [{"request": "cells"}]
    (result,) = [e for e in events if e.type == "tool/result"]
    text = result.data["message"]["content"][0]["content"][0]["text"]
    if front_end == "answers":
        assert text == (
            "Notebook work.ipynb, the live document open in the front end (2 cells; edits not saved yet are "
            "included)\n\n[1] markdown\n# Draft, not saved\n\n[2] code · In [7]\nx = 41 + 1\nx\nOutput:\n42"
        )
    else:
        assert text.startswith(f"Notebook work.ipynb, as saved at {when} (5 cells;")
