"""`mlperf-warehouse export`: Parquet (hive-partitioned by round) and CSV that open in DuckDB and Polars."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import polars as pl
import pytest

from pipelines.lib.mlperf.rounds import round_sort_key
from pipelines.lib.warehouse.exports import EXPORT_MARKER, export
from pipelines.lib.warehouse.query import quote_literal
from pipelines.lib.warehouse.status import record_refresh_outcome
from support.cli import CLI
from support.mini_warehouse import build_warehouse

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

@pytest.fixture
def built(warehouse):
    build_warehouse(warehouse, rounds=("v4.1", "v5.0"))
    return warehouse


def _con() -> duckdb.DuckDBPyConnection:
    return duckdb.connect()


def test_parquet_export_matches_manifest(built, tmp_path):
    out = tmp_path / "bi" / "parquet"
    proc = subprocess.run(CLI + ["export", "--format", "parquet", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    published = duckdb.connect(str(built / "mlperf.duckdb"), read_only=True)
    built_at, fingerprint = published.execute("select built_at, fingerprint from _build_info").fetchone()
    assert (manifest["built_at"], manifest["fingerprint"]) == (built_at, fingerprint)
    names = {t["name"] for t in manifest["tables"]}
    assert {"fct_training_result", "fct_training_run", "dim_system", "fct_quarantine"} <= names
    assert not any(n.startswith(("raw_", "stg_", "_")) for n in names)

    for table in manifest["tables"]:
        path = str(out / table["path"])
        in_duckdb = _con().execute("select count(*) from read_parquet(?, hive_partitioning = true)", [path]).fetchone()[0]
        assert in_duckdb == table["rows"] == published.execute(f'select count(*) from "{table["name"]}"').fetchone()[0]
        if table["rows"]:
            frame = pl.read_parquet(path, hive_partitioning=True)
            assert frame.height == table["rows"]
            assert set(frame.columns) == {c["name"] for c in table["columns"]}

    result = next(t for t in manifest["tables"] if t["name"] == "fct_training_result")
    assert result["partitioned_by"] == ["round"] and result["rows"] > 0
    assert sorted(p.name for p in (out / "fct_training_result").iterdir()) == ["round=v4.1", "round=v5.0"]
    rounds = pl.scan_parquet(str(out / "fct_training_result" / "**" / "*.parquet"), hive_partitioning=True)
    assert rounds.select(pl.col("round").unique().sort()).collect()["round"].to_list() == ["v4.1", "v5.0"]


def test_every_exported_file_has_its_rows_in_one_order_so_exports_of_a_build_are_the_same_bytes(built, tmp_path):
    """Rows sorted by every column, a round at a time in round order (a parallel scan's order is not one order):
    two exports of one build are the same files, byte for byte."""
    def files(folder):
        return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
                if p.is_file() and p.name != "manifest.json"}

    def reader(fmt: str, table: dict) -> str:  # a CSV file read with the manifest's column types
        if fmt == "parquet":
            return "read_parquet(?)"
        types = ", ".join(f"{quote_literal(c['name'])}: {quote_literal(c['type'])}" for c in table["columns"])
        return f"read_csv(?, header = true, columns = {{{types}}})"

    con = _con()
    con.execute("set threads = 1")  # read each file in its own row order
    for fmt in ("csv", "parquet"):
        first, second = tmp_path / f"{fmt}-1", tmp_path / f"{fmt}-2"
        manifest = export(first, fmt, None, built)
        export(second, fmt, None, built)
        assert files(first) == files(second) and len(files(first)) >= len(manifest["tables"]) > 10
        for table in manifest["tables"]:
            read = reader(fmt, table)
            for path in sorted(first.glob(table["path"])):
                as_written = con.execute(f"select * from {read}", [str(path)]).fetchall()
                names = [d[0] for d in con.description]
                if "round" not in names:
                    assert as_written == con.execute(f"select * from {read} order by all", [str(path)]).fetchall(), path
                    continue
                index = names.index("round")
                rounds = list(dict.fromkeys(row[index] for row in as_written))  # in file order, each once
                assert rounds == sorted(rounds, key=lambda r: (r is None, round_sort_key(r or "v0.0"))), path
                assert as_written == [row for r in rounds for row in con.execute(
                    f"select * from {read} where round is not distinct from ? order by all", [str(path), r]).fetchall()]


def test_a_csv_file_holds_its_rounds_in_round_order_not_text_order(warehouse, tmp_path):
    build_warehouse(warehouse, rounds=("v9.1", "v10.0", "v2.1"))
    export(tmp_path / "csv", "csv", ["fct_training_result"], warehouse)
    rows = _con().execute("select round from read_csv(?, header = true)",
                          [str(tmp_path / "csv" / "fct_training_result.csv")]).fetchall()
    assert list(dict.fromkeys(r for (r,) in rows)) == ["v2.1", "v9.1", "v10.0"]


def test_csv_export_selected_tables(built, tmp_path):
    out = tmp_path / "csv"
    manifest = export(out, "csv", ["fct_training_result", "dim_system"])
    assert [t["name"] for t in manifest["tables"]] == ["fct_training_result", "dim_system"]
    for table in manifest["tables"]:
        assert pl.read_csv(out / table["path"]).height == table["rows"]
        assert _con().execute("select count(*) from read_csv(?)", [str(out / table["path"])]).fetchone()[0] == table["rows"]
    assert sorted(p.name for p in out.iterdir()) == [EXPORT_MARKER, "dim_system.csv", "fct_training_result.csv",
                                                     "manifest.json"]

    # Re-exporting replaces the previous export as a whole (no stale files left behind).
    export(out, "csv", ["dim_system"])
    assert sorted(p.name for p in out.iterdir()) == [EXPORT_MARKER, "dim_system.csv", "manifest.json"]


@pytest.mark.parametrize("bad", ['fct_training_result" ; drop table dim_system; --', "raw_training_runs", "_build_info"])
def test_only_public_catalog_tables_are_exported(built, tmp_path, bad):
    with pytest.raises(ValueError, match="unknown table"):
        export(tmp_path / "x", "parquet", [bad])
    assert not (tmp_path / "x").exists()


def test_refuses_builds_dir_and_foreign_directories(built, tmp_path):
    with pytest.raises(ValueError, match="builds/"):
        export(built / "builds" / "export", "parquet")
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not empty"):
        export(foreign, "csv")
    assert (foreign / "notes.txt").read_text() == "keep me"
    # An unrelated directory that happens to hold a manifest.json is not ours either.
    (foreign / "manifest.json").write_text("{}")
    with pytest.raises(ValueError, match="not written by"):
        export(foreign, "csv")
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_status_and_python_shell(built):
    record_refresh_outcome(built, False, "results v5.0: HTTP 503")
    status = subprocess.run(CLI + ["status"], capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert "rounds (2): v4.1, v5.0" in status.stdout
    assert "last refresh: FAILED" in status.stdout and "HTTP 503" in status.stdout
    as_json = json.loads(subprocess.run(CLI + ["status", "--json"], capture_output=True, text=True).stdout)
    assert as_json["rounds"] == ["v4.1", "v5.0"] and len(as_json["builds"]) == 1

    shell = subprocess.run(CLI + ["shell", "--python"], capture_output=True, text=True, input=(
        "print('answer', con.sql('select count(*) from fct_training_result').fetchall()[0][0])\n"
        "print('polars', type(con.sql('select 1 as x').pl()).__name__)\n"
        "con.sql('create table hack (x int)')\n"
    ))
    assert "answer 4" in shell.stdout and "polars DataFrame" in shell.stdout
    assert "read-only" in shell.stderr.lower()  # the connection refuses writes


def test_partition_files_keep_round_and_light_commands_skip_dagster(built, tmp_path):
    export(tmp_path / "p", "parquet", ["fct_training_run"])
    # Tools without hive support (Tableau, Power BI folder import) still get the round column.
    assert "round" in pl.read_parquet(tmp_path / "p" / "fct_training_run" / "round=v5.0").columns
    code = ("import sys, pipelines.cli as cli; cli.build_parser(); "
            "import pipelines.lib.warehouse.exports, pipelines.lib.warehouse.status, pipelines.lib.warehouse.store; "
            "assert 'dagster' not in sys.modules, 'a light command imported dagster'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_bi_recipe_connections_are_read_only(built):
    """What the README's Superset URI (`?access_mode=read_only`) and Python recipe open: reads work,
    writes are refused, so a BI tool can never lock out a refresh."""
    con = duckdb.connect(str(built / "mlperf.duckdb"), config={"access_mode": "read_only"})
    assert con.execute("select count(*) from fct_training_result").fetchall()[0][0] > 0
    assert con.sql("select * from fct_training_result where round = 'v5.0'").pl().height > 0
    with pytest.raises(duckdb.Error, match="read-only"):
        con.execute("create table scratch as select 1")


def test_the_mlcommons_summary_has_the_fields_and_types_of_mlcommons_results_table(tmp_path):
    """`export --format mlcommons-summary`: one record per published result, each field of SUMMARY_FIELDS with its
    type, the names those of the summary_results.json MLCommons publishes (the shared Inference round's, when
    ../shared is here)."""
    import json
    import tarfile

    from pipelines.lib.warehouse.exports import export
    from pipelines.lib.warehouse.mlcommons_summary import SUMMARY_FIELDS, check_record
    from support.paths import SHARED_MLPERF

    base = tmp_path / "warehouse"
    build_warehouse(base)
    manifest = export(tmp_path / "summary", "mlcommons-summary", None, base)
    records = json.loads((tmp_path / "summary" / "summary_results.json").read_text())
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        published = con.execute("select count(*) from fct_training_result where score_minutes is not null").fetchone()[0]
    assert len(records) == published == manifest["tables"][0]["rows"] > 0
    assert [problem for r in records for problem in check_record(r)] == []
    assert len({r["ID"] for r in records}) == len(records)
    assert all(r["Suite"] == "training" and r["Performance_Units"] == "minutes" for r in records)
    inference = SHARED_MLPERF / "inference" / "inference_results_v5.1-main.tar.gz"
    if inference.is_file():
        with tarfile.open(inference) as tar:
            member = next(m for m in tar if m.name.endswith("/summary_results.json"))
            theirs = json.load(tar.extractfile(member))
        their_fields = {k for r in theirs for k in r}
        assert {name for name, _, _ in SUMMARY_FIELDS} <= their_fields
        for name, kind, _ in SUMMARY_FIELDS:  # the JSON type most of MLCommons' own records use ("a#" is "" at times)
            values = [r[name] for r in theirs if name in r and r[name] is not None]
            typed = sum(isinstance(v, kind) or (kind is float and isinstance(v, int)) for v in values)
            assert typed > len(values) / 2, name
