"""What users get as JSON parses with any strict parser (NaN and ±Infinity are null), and a query session's memory
bound holds for every allocation, strings built by the SQL included: `query`, `shell` (the duckdb CLI) and
`shell --python`."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import duckdb
import pytest

from pipelines import cli
from pipelines.lib.warehouse.status import record_refresh_outcome
from pipelines.lib.warehouse.store import publish
from support.cli import CLI
from support.mini_warehouse import build_warehouse

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def strict(text: str):
    """json.loads as strict parsers read JSON: NaN, Infinity and -Infinity are errors, not numbers."""
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A published warehouse whose results hold NaN and ±Infinity (written into a copy of its build, then published)."""
    base = tmp_path_factory.mktemp("strict") / "warehouse"
    base.mkdir()
    assert build_warehouse(base).published
    build = sorted((base / "builds").glob("mlperf-*.duckdb"))[-1]
    hostile = build.with_name("mlperf-29990101T000000000000Z.duckdb")
    shutil.copyfile(build, hostile)
    con = duckdb.connect(str(hostile))
    con.execute("update fct_training_result set score_minutes = case when system = 'sys0' then 'nan'::double "
                "else 'inf'::double end, energy_to_train_j = '-inf'::double")
    for (table, column) in con.execute(  # the first double of every mart table: what charts and figures read
            "select table_name, min_by(column_name, ordinal_position) from information_schema.columns "
            "join information_schema.tables using (table_name) where table_type = 'BASE TABLE' "
            "and table_name like 'mart%' and data_type = 'DOUBLE' group by 1").fetchall():
        con.execute(f'update "{table}" set "{column}" = \'nan\'::double')
    con.close()
    publish(hostile, base)
    return base


def test_query_json_is_strict(base, capsys):
    sql = ("select 'nan'::double as a, '-inf'::double as b, ['inf'::double, 1.5] as c, {'x': 'nan'::double} as d, "
           "map {'k': 'inf'::double} as e, 2.5::decimal(4, 2) as f, score_minutes from fct_training_result")
    assert cli.main(["query", sql, "--format", "json", "--warehouse-dir", str(base)]) == 0
    rows = strict(capsys.readouterr().out)
    assert rows[0] | {"score_minutes": None} == {"a": None, "b": None, "c": [None, 1.5], "d": {"x": None},
                                                 "e": {"k": None}, "f": "2.50", "score_minutes": None}
    assert {r["score_minutes"] for r in rows} == {None}


def test_status_json_and_the_records_it_reads_are_strict(base, capsys):
    record_refresh_outcome(base, True, "done", steps=[{"name": "round v5.0", "ok": True, "seconds": math.nan,
                                                       "detail": "parsed", "bytes": math.inf}], published=True)
    strict((base / "builds" / "last_refresh.json").read_text())
    strict((base / "builds" / "published.json").read_text())
    assert cli.main(["status", "--json", "--warehouse-dir", str(base)]) == 0
    shown = strict(capsys.readouterr().out)
    assert shown["last_refresh"]["steps"][0]["seconds"] is None and shown["last_refresh"]["steps"][0]["bytes"] is None


def test_exported_json_is_strict(base, tmp_path):
    out = tmp_path / "summary"
    assert cli.main(["export", "--format", "mlcommons-summary", "--out", str(out), "--warehouse-dir", str(base)]) == 0
    records = strict((out / "summary_results.json").read_text())
    training = [r for r in records if r.get("Performance_Units") == "minutes"]
    assert training and all(r["Performance_Result"] is None for r in training)
    strict((out / "manifest.json").read_text())


def test_the_site_data_is_strict(base, tmp_path):
    out = tmp_path / "site"
    assert cli.main(["site", "--out", str(out), "--warehouse-dir", str(base)]) == 0
    documents = [p for p in out.rglob("*.json")]
    assert documents
    for path in documents:
        strict(path.read_text())


PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[2:], input=sys.argv[1], capture_output=True, text=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
print(done.returncode)
sys.stderr.write(done.stdout + done.stderr)
"""
LIMIT = 256 << 20
# Four strings of 300 MB each, built outside DuckDB's buffer manager: 1.2 GB unbounded, about 0.6 GB at a time on
# two threads; under a 256 MiB bound the first one cannot be built.
STRINGS = "select sum(length(repeat('x', 300000000 + range::int))) as n from range(4)"


def _peak(command: list[str], stdin: str = "") -> tuple[int, int, str]:
    """(peak RSS of the command's process tree, exit code, its output)."""
    done = subprocess.run([sys.executable, "-c", PEAK, stdin, *command], capture_output=True, text=True,
                          env=os.environ | {"MLPERF_QUERY_MEMORY_BYTES": str(LIMIT)})
    peak, code = done.stdout.split()
    return int(peak), int(code), done.stderr


def test_a_query_building_strings_is_held_to_the_memory_bound(base):
    baseline, code, _ = _peak(CLI + ["query", "select 1", "--warehouse-dir", str(base)])
    assert code == 0
    peak, code, out = _peak(CLI + ["query", STRINGS, "--warehouse-dir", str(base)])
    assert code == 1 and out.strip() == ("error: the query needs more than 0.25 GiB of memory (--memory-limit BYTES "
                                         "or MLPERF_QUERY_MEMORY_BYTES allow more)"), out
    assert peak < baseline + LIMIT, (peak, baseline)
    # the same statement fits a bound that holds it
    peak, code, out = _peak(CLI + ["query", STRINGS, "--memory-limit", str(3 << 30), "--format", "json",
                                   "--warehouse-dir", str(base)])
    assert code == 0 and strict(out)[0]["n"] == 4 * 300000000 + 6


@pytest.mark.parametrize("python", [False, True], ids=["duckdb-cli", "python"])
def test_a_shell_session_is_held_to_the_memory_bound(base, python):
    from pipelines.commands.shell import cli_own_bytes, duckdb_cli

    if not python and duckdb_cli() is None:
        pytest.skip("the duckdb CLI is not installed (pip install duckdb-cli: the test extra)")
    statement = f'con.sql("{STRINGS}").fetchall()\n' if python else STRINGS + ";\n"
    baseline, _, _ = _peak(CLI + ["shell", "--warehouse-dir", str(base)] + (["--python"] if python else []), "")
    peak, _, out = _peak(CLI + ["shell", "--warehouse-dir", str(base)] + (["--python"] if python else []),
                         statement + ("print('after')\n" if python else "select 'after';\n"))
    assert "Out of Memory Error" in out and "after" in out, out  # the statement failed, the session went on
    assert peak < baseline + LIMIT + (0 if python else cli_own_bytes()), (peak, baseline)
