"""The command line a new user meets: --version, help with examples, typos answered with the valid
values (exit 2), readable query tables, a sandbox for typed SQL, structured status, and a published
file the duckdb CLI from PyPI opens."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import COMMANDS, build_parser
from pipelines.commands.query import format_cell, render_table
from pipelines.commands.shell import duckdb_cli
from pipelines.lib.prices.curated import load_curated_prices
from pipelines.lib.prices.fetch import stage_prices
from support.cli import CLI
from support.mini_warehouse import build_warehouse
from support.paths import PROJECT_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """Rounds v4.1 and v5.0 (systems sys0..sys2, benchmark bert, H100) and the curated TPU list prices."""
    base = tmp_path_factory.mktemp("cli") / "warehouse"
    base.mkdir()
    stage_prices("curated", load_curated_prices(), base, "2026-11-30")
    build_warehouse(base, rounds=("v4.1", "v5.0"), systems=3)
    return base


def cli(base, *args, env=None):
    environment = os.environ | {"MLPERF_WAREHOUSE_DIR": str(base)} | (env or {})
    environment.pop("MLPERF_DEBUG", None)
    return subprocess.run(CLI + list(args), capture_output=True, text=True, env=environment, timeout=120)


def test_version():
    proc = subprocess.run(CLI + ["--version"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.startswith("mlperf-warehouse 0.") and f"duckdb {duckdb.__version__}" in proc.stdout


def test_every_command_and_argument_has_help_and_an_example():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0]
    helps = {a.dest: a.help for a in commands._choices_actions}
    for name in COMMANDS:
        sub = commands.choices[name]
        assert helps.get(name), f"{name} has no help line"
        assert f"mlperf-warehouse {name}" in (sub.epilog or ""), f"{name} --help shows no example"
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.option_strings or action.dest} has no help text"


@pytest.mark.parametrize("args, wanted, valid", [
    (["refesh"], "did you mean 'refresh'", "query"),
    (["query", "select 1", "--format", "xml"], "unknown --format 'xml'", "csv"),
    (["report", "--round", "v3.1", "--out", "OUT"], "round v3.1 is not loaded", "v4.1, v5.0"),
    (["report", "--round", "v4.1", "--benchmark", "bertt", "--out", "OUT"], "did you mean 'bert'", "bert"),
    (["report", "--round", "v4.1", "--accelerators", "tpu", "--out", "OUT"], "unknown accelerator 'tpu'",
     "nvidia-h100"),
    (["compare", "sys0", "sys9", "--benchmark", "bert", "--round", "v4.1"], "unknown system 'sys9'",
     "sys0, sys1, sys2"),
    (["compare", "foo", "bar", "--benchmark", "bert", "--round", "v4.1"], "unknown system 'foo'", "sys0, sys1, sys2"),
    (["compare", "sys0", "sys1", "--benchmark", "gpt-3", "--round", "v4.1"], "unknown benchmark 'gpt-3'", "bert"),
    (["compare", "sys0", "sys1", "--benchmark", "bert", "--round", "v9.9"], "round v9.9 is not loaded", "v4.1"),
    (["prices", "--accelerator", "foo"], "unknown accelerator 'foo'", "google-tpu-v5e, google-tpu-v5p, google-tpu-v6e"),
    (["prices", "--accelerator", "tpu", "--pricing-model", "ondemand"], "did you mean 'on_demand'", "cud_1y"),
    (["export", "--tables", "fct_training_results", "--out", "OUT"], "did you mean 'fct_training_result'",
     "dim_system"),
    (["query", "select * from fct_training_results"], "fct_training_results does not exist", "fct_training_result"),
    (["rollback", "--to", "mlperf-1999.duckdb"], "no complete kept build named", "mlperf-"),
    (["refresh", "--rounds", "4.x", "--no-prices"], "not an MLPerf round: 'v4.x'", "like v4.1"),
])
def test_a_typo_exits_2_and_lists_the_valid_values(base, tmp_path, args, wanted, valid):
    proc = cli(base, *[str(tmp_path / "out") if a == "OUT" else a for a in args])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert wanted in proc.stderr and valid in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "pipelines." not in proc.stderr  # no internal class names
    assert not (tmp_path / "out").exists()  # nothing half-written for a wrong value


def test_a_round_that_is_loaded_still_reports(base, tmp_path):
    proc = cli(base, "report", "--round", "4.1", "--benchmark", "BERT", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r" / "report.html").is_file()


def test_prices_show_each_accelerator_model_separately(base):
    proc = cli(base, "prices", "--accelerator", "tpu")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split()[0] for line in proc.stdout.splitlines()[2:-1]]
    assert rows == ["google-tpu-v5e", "google-tpu-v5p", "google-tpu-v6e"], proc.stdout  # not just the cheapest chip
    spot = cli(base, "prices", "--accelerator", "tpu", "--pricing-model", "spot")
    assert [line.split()[0] for line in spot.stdout.splitlines()[2:-1]] == ["google-tpu-v5p"], spot.stdout


def test_prices_list_the_offers_costs_use(base):
    """`prices` reads mart_price_offer, the one home of current offers: each row says whether it is bookable,
    as the cost headline defines it, and each provider's price comes from one source."""
    import duckdb

    proc = cli(base, "query", "select * from mart_price_offer order by all", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0].split(",")
    assert {"price_source", "provider_kind", "is_bookable"} <= set(header)
    shown = cli(base, "prices", "--accelerator", "tpu")
    assert "bookable" in shown.stdout.splitlines()[0], shown.stdout
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        spot_bookable = con.execute("select count(*) from mart_price_offer where pricing_model = 'spot' and is_bookable")
        assert spot_bookable.fetchone()[0] == 0
        costs_not_from_offers = con.execute(
            "select count(*) from mart_cost_to_train c left join mart_price_offer o using (provider, sku, region, "
            "pricing_model) where o.provider is null or o.is_bookable <> c.is_bookable").fetchone()[0]
        assert costs_not_from_offers == 0


def test_query_table_is_readable_and_limited(base):
    proc = cli(base, "query", "select run_file, time_to_train_minutes / 3 as third, global_batch_size, "
                              "repeat('x', 80) as long_text from fct_training_run order by run_file")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    first = lines[2].split()
    assert first[1] == "3.333" and first[2] == "256"  # 10/3 at four significant digits; a count, no ".0"
    assert first[3] == "x" * 59 + "…"
    assert lines[-1] == "(30 rows)"

    limited = cli(base, "query", "select * from fct_training_run", "--limit", "5").stdout.splitlines()
    assert len(limited) == 2 + 5 + 1 and limited[-1].startswith("(5 of 30 rows shown; --limit N")
    everything = cli(base, "query", "select * from fct_run_event union all select * from fct_run_event")
    assert everything.returncode == 0


def test_query_csv_and_json_keep_full_precision_and_every_row(base):
    sql = "select time_to_train_minutes / 3 as third from fct_training_run order by 1"
    rows = list(json.loads(cli(base, "query", sql, "--format", "json").stdout))
    assert len(rows) == 30 and rows[0]["third"] == pytest.approx(10 / 3, rel=1e-15)
    csv_lines = cli(base, "query", sql, "--format", "csv").stdout.splitlines()
    assert len(csv_lines) == 31 and csv_lines[1] == repr(10 / 3)


def test_counts_are_integers_in_the_warehouse(base):
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    try:
        types = dict(con.execute("select column_name, data_type from information_schema.columns "
                                 "where table_name = 'fct_training_run'").fetchall())
        event_types = dict(con.execute("select column_name, data_type from information_schema.columns "
                                       "where table_name = 'fct_run_event'").fetchall())
    finally:
        con.close()
    assert types["global_batch_size"] == "BIGINT" and event_types["samples_count"] == "BIGINT"


def test_format_cell():
    assert format_cell(19.689616666666666) == "19.69"
    assert format_cell(3072.0) == "3072" and format_cell(0.000012345) == "1.234e-05"
    assert format_cell(0.85671) == "0.8567" and format_cell(None) == "NULL" and format_cell(7) == "7"
    assert format_cell("a" * 70, 10) == "a" * 9 + "…"
    assert render_table(["n"], [(1,), (22,)]).splitlines()[2] == " 1"  # numbers right-aligned


@pytest.mark.parametrize("sql", [
    "copy (select 1) to '{tmp}/x.csv'",
    "select * from read_csv('/etc/passwd')",
    "install httpfs",
    "attach '{tmp}/other.duckdb' as other",
    "set enable_external_access = true",
])
def test_query_is_sandboxed_by_default(base, tmp_path, sql):
    proc = cli(base, "query", sql.format(tmp=tmp_path))
    assert proc.returncode != 0, proc.stdout
    assert not list(tmp_path.iterdir())
    assert "root:" not in proc.stdout


def test_query_with_external_access_allowed_can_write_a_file(base, tmp_path):
    proc = cli(base, "query", f"copy (select 42 as answer) to '{tmp_path}/x.csv'", "--allow-external-access")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "x.csv").read_text().split() == ["answer", "42"]


def test_status_lines_and_json(base):
    from pipelines.lib.warehouse.status import record_refresh_outcome

    steps = [{"name": "results v4.1", "ok": True, "seconds": 1.0, "detail": "downloaded"},
             {"name": "prices aws", "ok": False, "seconds": 0.1, "detail": "aws: https://x.invalid: host not found"}]
    record_refresh_outcome(base, False, "the printed summary", steps=steps, published=True)
    text = cli(base, "status")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert any(line.startswith("  rounds (2):") and line.endswith("v4.1, v5.0") for line in lines)
    assert any(line.startswith("kept builds (1): mlperf-") for line in lines)
    assert "  prices aws: FAILED: aws: https://x.invalid: host not found" in lines
    status = json.loads(cli(base, "status", "--json").stdout)
    assert status["last_refresh"]["steps"] == steps and "detail" not in status["last_refresh"]
    assert status["rounds"] == ["v4.1", "v5.0"]


def _duckdb_cli_or_skip() -> str:
    binary = duckdb_cli()
    if binary is None:
        pytest.skip("the duckdb CLI is not installed (pip install -e '.[test]' installs duckdb-cli)")
    return binary


def test_the_duckdb_cli_from_pypi_opens_the_published_file(base):
    binary = _duckdb_cli_or_skip()
    proc = subprocess.run([binary, "-readonly", "-csv", "-c", "select count(*) from fct_training_result",
                           str(base / "mlperf.duckdb")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["count_star()", "6"] or proc.stdout.split()[-1] == "6", proc.stdout


def test_shell_runs_the_cli_sandboxed(base, tmp_path):
    _duckdb_cli_or_skip()
    statements = (f"select count(*) as n from dim_system;\ncopy (select 1) to '{tmp_path}/x.csv';\n"
                  "install httpfs;\n.output " + str(tmp_path / "y.txt") + "\n")
    proc = subprocess.run(CLI + ["shell"], input=statements, capture_output=True, text=True, timeout=60,
                          env=os.environ | {"MLPERF_WAREHOUSE_DIR": str(base)})
    assert "6" in proc.stdout, proc.stdout + proc.stderr
    assert not list(tmp_path.iterdir()), proc.stderr


def test_shell_falls_back_to_python_when_the_cli_cannot_open_the_file(tmp_path, monkeypatch, capsys):
    """A duckdb CLI that refuses the file (as an older CLI on PATH refuses a newer storage format): the shell
    says why and opens the sandboxed Python REPL instead."""
    import io

    from pipelines.commands import shell

    base = tmp_path / "warehouse"
    base.mkdir()
    con = duckdb.connect(str(base / "mlperf.duckdb"))
    con.execute("create table t as select 41 + 1 as answer")
    con.close()
    older = tmp_path / "duckdb"  # what DuckDB 1.0's CLI prints for a file written by a newer storage version
    older.write_text("#!/bin/sh\necho 'Error: unable to open database: IO Error: Trying to read a database file "
                     "with version number 67, but we can only read version 64.' >&2\nexit 1\n")
    older.chmod(0o755)
    monkeypatch.setattr(shell, "duckdb_cli", lambda: str(older))
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"con.execute(\"copy t to '{tmp_path}/x.csv'\")\n"  # sandboxed
                                                  "print(con.execute('select answer from t').fetchone()[0])\n"))
    args = build_parser().parse_args(["shell", "--warehouse-dir", str(base)])
    assert args.handler(args) == 0
    out = capsys.readouterr()
    assert "cannot open mlperf.duckdb: Error: unable to open database: IO Error" in out.err
    assert "opening a Python REPL instead" in out.err
    assert "42" in out.out + out.err
    assert "Permission Error" in out.out + out.err and not (tmp_path / "x.csv").exists()


def test_ci_installs_duckdb_cli_through_the_pinned_test_extra():
    import tomllib

    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert any(dep.startswith("duckdb-cli==") for dep in project["project"]["optional-dependencies"]["test"])
    # CI installs the lock file as it is, which pins the test extra (duckdb-cli among it) and leaves out what
    # only mlperf-logging's own scorer needs (docs: development)
    assert "pip install -q --no-deps -r requirements.lock" in (PROJECT_ROOT / ".ci" / "run").read_text()
    locked = (PROJECT_ROOT / "requirements.lock").read_text().splitlines()
    assert any(line.startswith("duckdb-cli==") for line in locked)
    assert not any(line.startswith(("pandas==", "numpy==", "scipy==")) for line in locked)
    assert shutil.which("duckdb", path=str(Path(sys.executable).parent)) or duckdb_cli()
