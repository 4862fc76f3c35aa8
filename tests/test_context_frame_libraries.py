"""Every frame library gets the SPEC §9.3 summary, and a lazy frame is never computed: pyarrow tables
and record batches summarised like pandas and polars; Dask frames, DuckDB relations, Ibis tables and
polars LazyFrames described from their schema by ``%inject`` and by the tools that run without
approval (``list_variables``, ``describe_variable``), each proven by a probe that counts every time
the frame's rows are computed (and that does count once the test computes them itself).

modin and cuDF go through the same pandas-like path but are not installed here (modin pins pandas
below 3; cuDF needs a GPU)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest
from kernel_helpers import ipython_shell, magics

from nbagent._json import thaw
from nbagent.context import dataframe, frame_outline, is_dataframe, is_lazy_frame
from nbagent.notebook.magics.injection import InjectOptions, build_injection
from nbagent.notebook.tools.namespace_view import describe_text, list_variables_text

pa = pytest.importorskip("pyarrow")
dd = pytest.importorskip("dask.dataframe")
duckdb = pytest.importorskip("duckdb")
ibis = pytest.importorskip("ibis")


def injected(expr: str, namespace: dict[str, Any], **options: Any) -> str:
    """What ``%inject EXPR`` queues, read as the magic reads it."""
    injection = build_injection(
        expr,
        InjectOptions(**options),
        evaluate=lambda e: eval(e, {}, namespace),
        names=lambda: list(namespace),
        last_error=None,
        cell=None,
    )
    return injection.message.plain_text


def every_path(name: str, value: Any) -> dict[str, str]:
    """The three ways the user or the model looks at a variable without approval."""
    namespace = {name: value}
    return {
        "inject": injected(name, namespace),
        "list": list_variables_text(namespace, {}),
        "describe": describe_text(namespace, {}, name),
    }


# -- eager frames of other libraries ---------------------------------------------------------------


def test_pyarrow_tables_and_record_batches_get_the_same_statistics_as_polars() -> None:
    data = {"n": [1, 2, None, 4] * 30, "s": ["x", "y", "x", None] * 30}
    table = pa.table(data)
    lines = {}
    for label, frame in (("polars", pl.DataFrame(data)), ("table", table), ("batch", table.to_batches()[0])):
        assert is_dataframe(frame) and not is_lazy_frame(frame)
        message = dataframe(frame, name="t")
        text = message.plain_text
        assert "statistics: exact over all 120 rows" in text and thaw(message.source)["shape"] == [120, 2]
        stats = [line.split(" · ", 1)[1] for line in text.splitlines() if line.startswith("- ")]
        lines[label] = stats
    assert lines["table"] == lines["batch"] == lines["polars"]
    assert lines["table"][0].startswith("non-null 90 (25.0% null) · distinct 3 · min 1 · max 4 · mean 2.33")
    text = dataframe(table, name="t").plain_text
    assert 'library="pyarrow" type="pyarrow.Table"' in text and "- n: int64" in text
    assert "memory: " in text and "| 1 | x |" in text
    assert frame_outline(table) == (120, ["n", "s"])


# -- lazy frames: probes that count every computation ----------------------------------------------


class Probe:
    """Counts the computations of the frame it is built into."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, value: Any) -> Any:
        self.calls += 1
        return value


@pytest.fixture
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # narwhals' note that Dask support moves out
        yield


def assert_never_computed(
    name: str, value: Any, probe: Probe, compute: Callable[[], Any], expect: list[str]
) -> dict[str, str]:
    """All three paths describe ``value`` without one computation; then computing it counts."""
    seen = every_path(name, value)
    assert probe.calls == 0, f"{name} was computed {probe.calls} times"
    for text in (seen["inject"], seen["describe"]):
        assert f'<dataframe name="{name}"' in text and 'shape="? x' in text
        assert "lazy frame: schema only; no rows were read" in text
        for part in expect:
            assert part in text, (part, text)
    assert (
        f"{name} · " in seen["list"]
        and "lazy, ?×" in seen["list"]
        and "rows unknown until it runs" in seen["list"]
    )
    compute()
    assert probe.calls > 0  # the probe would have seen a computation
    return seen


def test_a_dask_frame_is_described_from_its_partitions_without_computing_any(quiet: None) -> None:
    probe = Probe()
    meta = pd.DataFrame({"id": pd.Series([], dtype="int64"), "city": pd.Series([], dtype="str")})
    ddf = dd.from_map(
        lambda i: probe(pd.DataFrame({"id": [i] * 3, "city": ["Oslo", "Lima", "Pune"]})), range(8), meta=meta
    )
    seen = assert_never_computed(
        "ddf",
        ddf,
        probe,
        ddf.compute,
        ["partitions: 8", "divisions: unknown", "- id: int64", "`ddf.compute()`", "`ddf.head(10_000)`"],
    )
    assert "columns: id, city" in seen["list"]


def test_a_dask_frame_with_known_divisions_says_its_index_range(quiet: None) -> None:
    probe = Probe()
    base = dd.from_pandas(
        pd.DataFrame({"x": range(100)}, index=pd.RangeIndex(100, name="row")), npartitions=4
    )
    meta = pd.DataFrame({"x": pd.Series([], dtype="int64")}, index=pd.RangeIndex(0, name="row"))
    ddf = base.map_partitions(lambda part: probe(part), meta=meta)
    assert_never_computed(
        "ddf", ddf, probe, ddf.compute, ["partitions: 4", "divisions: known; index row from 0 to 99"]
    )
    computed = probe.calls
    text = dataframe(ddf.x, name="ddf.x").plain_text
    assert probe.calls == computed and 'type="dask.Series"' in text and "`ddf.x.compute()`" in text


def test_a_polars_lazy_frame_is_described_without_running_its_query() -> None:
    probe = Probe()
    lf = pl.LazyFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}).map_batches(
        probe, schema={"a": pl.Int64, "b": pl.String}
    )
    assert_never_computed(
        "lf", lf, probe, lf.collect, ["- a: Int64", "plan (not optimised, not run):", "`lf.collect()`"]
    )


def test_a_duckdb_relation_is_described_without_running_its_query() -> None:
    probe = Probe()
    con = duckdb.connect()
    con.create_function("probe", probe, ["BIGINT"], "BIGINT")
    rel = con.sql("select probe(range) as n, range::varchar as label from range(1000)")
    assert_never_computed(
        "rel",
        rel,
        probe,
        rel.fetchall,
        ["- n: BIGINT", "- label: VARCHAR", "SQL (not run):", "`rel.df()`", "`rel.limit(10_000).df()`"],
    )


def test_an_ibis_table_is_described_without_running_its_query() -> None:
    probe = Probe()
    lf = pl.LazyFrame({"a": [1, 2, 3]}).map_batches(probe, schema={"a": pl.Int64})
    table = ibis.polars.connect({"t": lf}).table("t")
    expr = table.filter(table.a > 1)
    assert_never_computed("expr", expr, probe, expr.to_pandas, ["- a: int64", "`expr.to_pandas()`"])


def test_lazy_frames_inside_a_dict_are_listed_without_computing(quiet: None) -> None:
    probe = Probe()
    lf = pl.LazyFrame({"a": [1]}).map_batches(probe, schema={"a": pl.Int64})
    text = injected("frames", {"frames": {"raw": lf, "n": 3}})
    assert probe.calls == 0
    assert "'raw': polars.LazyFrame ? x 1 (lazy), columns a (`%inject frames['raw']` for its summary)" in text


def test_a_dict_of_duckdb_relations_in_list_variables_runs_no_query() -> None:
    probe = Probe()
    con = duckdb.connect()
    con.create_function("probe", probe, ["BIGINT"], "BIGINT")
    rel = con.sql("select probe(range) as n from range(10)")
    namespace = {"tables": {"counts": rel, "raw": pd.DataFrame({"a": [1, 2]})}}
    listed = list_variables_text(namespace, {})
    described = describe_text(namespace, {}, "tables")
    assert probe.calls == 0
    assert "tables · dict · len 2 · dict of 2 frames: 'counts' lazy ?×1, 'raw' 2×1" in listed
    assert "'counts': duckdb.DuckDBPyRelation ? x 1 (lazy), columns n" in described
    repr(rel)
    assert probe.calls > 0  # a repr would have run it


def test_inject_of_a_dask_frame_in_a_shell_computes_no_partition_and_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], quiet: None
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBAGENT_DB", raising=False)
    probe = Probe()
    meta = pd.DataFrame({"id": pd.Series([], dtype="int64")})
    ddf = dd.from_map(lambda i: probe(pd.DataFrame({"id": [i]})), range(8), meta=meta)
    with ipython_shell() as sh:
        sh.user_ns["ddf"] = ddf
        capsys.readouterr()
        sh.run_cell("%inject ddf")
        receipt = capsys.readouterr().out
        message = magics(sh).session.agent.inbox.next_step[-1]
        sh.run_cell("%agent close")
    assert probe.calls == 0
    assert "queued dataframe ddf · ?×1 · dask: " in receipt
    assert "partitions: 8" in message.plain_text and "`ddf.compute()`" in message.plain_text
    assert message.source["lazy"] is True and message.source["shape"] == [None, 1]
