"""Where the session file lives (SPEC §9.5)."""

from __future__ import annotations

from pathlib import Path

from nbagent.notebook.location import notebook_path, session_file


def test_the_file_sits_beside_the_notebook_named_by_jupyter(tmp_path: Path) -> None:
    nb = tmp_path / "analysis.ipynb"
    nb.write_text("{}")
    assert (
        session_file({"__session__": str(nb)}, environ={}, cwd=tmp_path)
        == tmp_path / "analysis.nbagent.sqlite"
    )


def test_jpy_session_name_is_used_when_the_namespace_has_no_session(tmp_path: Path) -> None:
    env = {"JPY_SESSION_NAME": str(tmp_path / "x.ipynb")}
    assert session_file({}, environ=env, cwd=tmp_path) == tmp_path / "x.nbagent.sqlite"


def test_vscode_notebook_file_wins(tmp_path: Path) -> None:
    ns = {"__vsc_ipynb_file__": str(tmp_path / "vs.ipynb"), "__session__": str(tmp_path / "other.ipynb")}
    assert session_file(ns, environ={}, cwd=tmp_path) == tmp_path / "vs.nbagent.sqlite"


def test_a_path_relative_to_the_server_root_resolves_in_the_kernels_folder(tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_text("{}")
    assert notebook_path({"__session__": "projects/deep/nb.ipynb"}, {}, tmp_path) == tmp_path / "nb.ipynb"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "n2.ipynb").write_text("{}")
    assert notebook_path({"__session__": "sub/n2.ipynb"}, {}, tmp_path) == tmp_path / "sub" / "n2.ipynb"


def test_without_a_notebook_the_file_is_nbagent_sqlite_in_the_working_directory(tmp_path: Path) -> None:
    assert session_file({}, environ={}, cwd=tmp_path) == tmp_path / "nbagent.sqlite"
    assert session_file({"__session__": "console-1"}, environ={}, cwd=tmp_path) == tmp_path / "nbagent.sqlite"


def test_db_override_and_nbagent_db_take_precedence(tmp_path: Path) -> None:
    ns = {"__session__": str(tmp_path / "a.ipynb")}
    env = {"NBAGENT_DB": "shared.sqlite"}
    assert session_file(ns, environ=env, cwd=tmp_path) == tmp_path / "shared.sqlite"
    assert session_file(ns, override="/x/y.sqlite", environ=env, cwd=tmp_path) == Path("/x/y.sqlite")
