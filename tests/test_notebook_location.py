"""Where the session file lives (SPEC §9.5)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kernel_helpers import ipython_shell, magics, read_events

from nbagent.notebook.kernel.session_file import notebook_path, session_file
from nbagent.store.location import SqliteLocation


def test_the_file_sits_beside_the_notebook_named_by_jupyter(tmp_path: Path) -> None:
    nb = tmp_path / "analysis.ipynb"
    nb.write_text("{}")
    assert session_file({"__session__": str(nb)}, environ={}, cwd=tmp_path) == SqliteLocation(
        tmp_path / "analysis.nbagent.sqlite"
    )


def test_jpy_session_name_is_used_when_the_namespace_has_no_session(tmp_path: Path) -> None:
    env = {"JPY_SESSION_NAME": str(tmp_path / "x.ipynb")}
    assert session_file({}, environ=env, cwd=tmp_path) == SqliteLocation(tmp_path / "x.nbagent.sqlite")


def test_vscode_notebook_file_wins(tmp_path: Path) -> None:
    ns = {"__vsc_ipynb_file__": str(tmp_path / "vs.ipynb"), "__session__": str(tmp_path / "other.ipynb")}
    assert session_file(ns, environ={}, cwd=tmp_path) == SqliteLocation(tmp_path / "vs.nbagent.sqlite")


def test_a_path_relative_to_the_server_root_resolves_in_the_kernels_folder(tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_text("{}")
    assert notebook_path({"__session__": "projects/deep/nb.ipynb"}, {}, tmp_path) == tmp_path / "nb.ipynb"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "n2.ipynb").write_text("{}")
    assert notebook_path({"__session__": "sub/n2.ipynb"}, {}, tmp_path) == tmp_path / "sub" / "n2.ipynb"


def test_without_a_notebook_the_file_is_nbagent_sqlite_in_the_working_directory(tmp_path: Path) -> None:
    assert session_file({}, environ={}, cwd=tmp_path) == SqliteLocation(tmp_path / "nbagent.sqlite")
    assert session_file({"__session__": "console-1"}, environ={}, cwd=tmp_path) == SqliteLocation(
        tmp_path / "nbagent.sqlite"
    )


def test_db_override_and_nbagent_db_take_precedence(tmp_path: Path) -> None:
    ns = {"__session__": str(tmp_path / "a.ipynb")}
    env = {"NBAGENT_DB": "shared.sqlite"}
    assert session_file(ns, environ=env, cwd=tmp_path) == SqliteLocation(tmp_path / "shared.sqlite")
    assert session_file(ns, override="/x/y.sqlite", environ=env, cwd=tmp_path) == SqliteLocation(
        Path("/x/y.sqlite")
    )


def test_the_documented_precedence_override_then_nbagent_db_then_vscode_then_jupyter(tmp_path: Path) -> None:
    ns = {"__vsc_ipynb_file__": str(tmp_path / "vs.ipynb"), "__session__": str(tmp_path / "lab.ipynb")}
    env = {"NBAGENT_DB": "env.sqlite", "JPY_SESSION_NAME": str(tmp_path / "jpy.ipynb")}
    assert session_file(ns, override="cli.sqlite", environ=env, cwd=tmp_path) == SqliteLocation(
        tmp_path / "cli.sqlite"
    )
    assert session_file(ns, environ=env, cwd=tmp_path) == SqliteLocation(tmp_path / "env.sqlite")
    del env["NBAGENT_DB"]
    assert session_file(ns, environ=env, cwd=tmp_path) == SqliteLocation(tmp_path / "vs.nbagent.sqlite")
    del ns["__vsc_ipynb_file__"]
    assert session_file(ns, environ=env, cwd=tmp_path) == SqliteLocation(tmp_path / "lab.nbagent.sqlite")
    assert session_file({}, environ=env, cwd=tmp_path) == SqliteLocation(tmp_path / "jpy.nbagent.sqlite")


def test_an_empty_nbagent_db_does_not_override_the_notebook(tmp_path: Path) -> None:
    ns = {"__vsc_ipynb_file__": str(tmp_path / "vs.ipynb")}
    assert session_file(ns, environ={"NBAGENT_DB": ""}, cwd=tmp_path) == SqliteLocation(
        tmp_path / "vs.nbagent.sqlite"
    )


def test_a_vscode_kernel_keeps_its_session_beside_the_notebook_until_nbagent_db_or_db_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """VS Code runs the kernel wherever it likes and names the notebook in ``__vsc_ipynb_file__``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBAGENT_DB", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    folder = tmp_path / "project" / "reports"
    folder.mkdir(parents=True)
    (folder / "q3 sales.ipynb").write_text("{}")

    async def body() -> list[Path]:
        paths = []
        with ipython_shell() as sh:
            sh.user_ns["__vsc_ipynb_file__"] = str(folder / "q3 sales.ipynb")
            session = magics(sh).session
            sh.run_cell("%inject beside the notebook")
            paths.append(session.agent.path)
            sh.run_cell("%agent close")
            monkeypatch.setenv("NBAGENT_DB", "shared.sqlite")
            sh.run_cell("%inject in the NBAGENT_DB file")
            paths.append(session.agent.path)
            sh.run_cell("%agent --db mine.sqlite")
            sh.run_cell("%inject -- in the --db file")  # after a leading `--` all is text
            paths.append(session.agent.path)
            capsys.readouterr()
            sh.run_cell("%agent status")
            assert f"file: {tmp_path / 'mine.sqlite'}" in capsys.readouterr().out
        return paths

    assert asyncio.run(body()) == [
        folder / "q3 sales.nbagent.sqlite",
        tmp_path / "shared.sqlite",
        tmp_path / "mine.sqlite",
    ]
    assert not (tmp_path / "nbagent.sqlite").exists()
    for path, text in [
        (folder / "q3 sales.nbagent.sqlite", "beside the notebook"),
        (tmp_path / "shared.sqlite", "in the NBAGENT_DB file"),
        (tmp_path / "mine.sqlite", "in the --db file"),
    ]:
        [splice] = read_events(path)
        assert splice.data["inserted"][0]["content"][0]["text"] == text
