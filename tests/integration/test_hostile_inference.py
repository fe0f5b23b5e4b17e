"""MLPerf Inference rounds made hostile, refreshed over real HTTP on 127.0.0.1 by the installed command (a process:
its time and peak memory are what is measured). Every input is generated here:

- `v5.1`, shipping MLCommons' table: a summary holding a 1 MiB line of spaces (a backtracking parser takes time
  quadratic in its length), a 256 MiB summary of newlines (read whole, it costs memory many times its size), a
  lower-case `offline` folder beside the real `Offline` holding a fake result, the table's figures NaN, Infinity
  and 1e309, a summary and detail log stating `nan` and `inf`, and a summary, detail log and systems file each held
  twice (the second copy faking another figure);
- `v5.0`, without the table: the fake `offline` folder again (the scenario's own spelling is kept).

The refresh publishes within generous bounds of time and memory; nothing fake or non-finite is published, and
each hostile member is a quarantine row saying why. A second refresh past the scoring deadline keeps the round's
previous data and says so in one line."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import time

import duckdb
import pytest

from pipelines.runner.jobs import refresh
from support.cli import CLI
from support.http_server import LoopbackServer
from support.inference_archive import (
    SYSTEM,
    detail_log,
    good_round,
    offline_summary,
    result_members,
    table_file,
    write_archive,
)
from support.paths import copy_warehouse
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

MiB = 1 << 20
LLM, REAL, FAKE = "llama2-70b-99", (92.4, 27804.0), (2953.1, 888888.0)  # samples/s and tokens/s
RUN = "performance/run_1"
LONG_LINE = f"{SYSTEM}/ssd/Offline/{RUN}/mlperf_log_summary.txt"
NEWLINES = f"{SYSTEM}/rnnt/Offline/{RUN}/mlperf_log_summary.txt"
NAN_RUN = f"{SYSTEM}/3d-unet-99/Offline/{RUN}"
TWICE = (f"{SYSTEM}/resnet50/Offline/{RUN}/mlperf_log_summary.txt", f"{SYSTEM}/resnet50/Offline/{RUN}/mlperf_log_detail.txt",
         "closed/Acme/systems/box.json")
NON_FINITE = {"resnet50": "NaN", "retinanet": "Infinity", "bert-99": "1e309"}
URL = "inference_results_{version}-main.tar.gz"


def _with_fake_offline() -> dict[str, bytes]:
    return (good_round() | result_members(LLM, "Offline", REAL[0], tokens_per_second=REAL[1])
            | result_members(LLM, "offline", FAKE[0], tokens_per_second=FAKE[1]))


def _write_site(site) -> None:
    members = _with_fake_offline() | {
        LONG_LINE: b"a" + b" " * MiB + b"x\n",
        f"{NAN_RUN}/mlperf_log_summary.txt": offline_summary("nan").replace(b"682362179705", b"inf"),
        f"{NAN_RUN}/mlperf_log_detail.txt": detail_log(effective_scenario="Offline", result_validity="VALID",
                                                       effective_test_mode="PerformanceOnly", num_errors=0,
                                                       result_samples_per_second="raw:NaN"),
    }
    rows = [{"Location": f"{SYSTEM}/{model}/Offline", "Performance_Units": "Samples/s", "Performance_Result": value}
            for model, value in NON_FINITE.items()]
    rows.append({"Location": f"{SYSTEM}/{LLM}/Offline", "Performance_Units": "Tokens/s", "Performance_Result": REAL[1]})
    members |= table_file(rows)
    fakes = {path: members[path].replace(b"6607.08", b"999999").replace(b"Acme Box", b"Fake Box") for path in TWICE}
    write_archive(site / URL.format(version="v5.1"), members, {NEWLINES: (b"\n", 256 * MiB)}, fakes)
    write_archive(site / URL.format(version="v5.0"), _with_fake_offline(), top="inference_results_v5.0-main")


def _run_measured(args: list[str], env: dict[str, str], out_dir, timeout: float = 600
                  ) -> tuple[int, str, float, float]:
    """The command's exit code, its output, its wall time (s) and its peak resident memory (MB), of this process
    alone (os.wait4: not the largest of every child this test process ever had); killed past `timeout`."""
    out, err = out_dir / "stdout", out_dir / "stderr"
    started = time.perf_counter()
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(CLI + args, stdout=stdout, stderr=stderr, env=env)
    try:
        while (reaped := os.wait4(process.pid, os.WNOHANG))[0] == 0:
            if time.perf_counter() - started > timeout:
                process.kill()
                reaped = os.wait4(process.pid, 0)
                break
            time.sleep(0.2)
    finally:
        process.returncode = 0  # reaped here: Popen must not wait for it again
    _, status, usage = reaped
    return (os.waitstatus_to_exitcode(status), out.read_text() + err.read_text(), time.perf_counter() - started,
            usage.ru_maxrss / 1024)


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-inference")
    site, base = root / "site", root / "warehouse"
    site.mkdir()
    _write_site(site)
    assert (site / URL.format(version="v5.1")).stat().st_size < 2 * MiB  # small archives, hostile members
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLPERF_")} | {
        "MLPERF_WAREHOUSE_DIR": str(base), "MLPERF_SCORING_DEADLINE_SECONDS": "120"}
    with LoopbackServer(site) as server:
        code, output, seconds, peak_mb = _run_measured(
            ["refresh", "--suites", "inference", "--rounds", "v5.1,v5.0", "--no-prices",
             "--inference-results-url-template", f"{server.url}/{URL}"], env, root)
    print(f"refresh of the hostile rounds: {seconds:.1f} s, peak RSS {peak_mb:.0f} MB")
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        yield {"code": code, "output": output, "seconds": seconds, "peak_mb": peak_mb, "base": base, "site": site,
               "con": con}


def test_the_hostile_rounds_publish_within_bounds_of_time_and_memory(refreshed):
    assert refreshed["code"] == 0, refreshed["output"]
    assert re.search(r"results Inference v5\.1\s+ok", refreshed["output"]), refreshed["output"]
    # Generous bounds for the whole refresh, Dagster and the build included: a parser quadratic in the 1 MiB line's
    # length, or a summary read whole, would blow them by orders of magnitude on any machine.
    assert refreshed["seconds"] < 300 and refreshed["peak_mb"] < 1500, (refreshed["seconds"], refreshed["peak_mb"])


def _quarantine(con, round_version: str) -> dict[str, str]:
    """Each quarantined file of the round → its reasons, one a line."""
    return dict(con.execute("select file, string_agg(reason, '\n' order by reason) from fct_quarantine "
                            "where partition = ? group by file", [round_version]).fetchall())


def test_the_long_line_and_the_newline_flood_are_quarantined_with_the_reason(refreshed):
    reasons = _quarantine(refreshed["con"], "v5.1")
    assert reasons[LONG_LINE] == ("a line longer than the 64 KiB line limit (MLPERF_MAX_LOADGEN_LINE_BYTES): the "
                                  "summary is not read")
    assert "the logs state no scenario LoadGen ran" in reasons[NEWLINES]  # read to its end: nothing in it


def test_one_result_per_spelling_the_one_mlcommons_names(refreshed):
    con = refreshed["con"]
    rows = con.execute("select round, location, performance_result from fct_inference_result where model = ? "
                       "order by round", [LLM]).fetchall()
    assert rows == [("v5.0", f"{SYSTEM}/{LLM}/Offline", REAL[1]), ("v5.1", f"{SYSTEM}/{LLM}/Offline", REAL[1])]
    assert con.execute("select count(*) from fct_inference_result where performance_result = ?", [FAKE[1]]
                       ).fetchone() == (0,)
    for round_version, why in (("v5.1", "as MLCommons' table lists it"),
                               ("v5.0", "as its scenario folder is spelled as LoadGen names the scenario")):
        reason = _quarantine(con, round_version)[f"{SYSTEM}/{LLM}/offline/{RUN}/mlperf_log_summary.txt"]
        assert reason.startswith(f"another spelling of the result {SYSTEM}/{LLM}/Offline") and reason.endswith(why)
    assert "quarantined" in refreshed["output"]  # counted in the refresh's summary


def test_the_summary_export_holds_one_record_per_result(refreshed):
    from pipelines.lib.warehouse.mlcommons_summary import summary_records

    records = [r for r in summary_records(refreshed["con"]) if r["ID"].startswith("inference-")]
    keys = [(r["version"], r["Location"].lower()) for r in records]
    assert len(keys) == len(set(keys)) == refreshed["con"].execute(
        "select count(*) from fct_inference_result where valid").fetchone()[0]
    assert [r["Performance_Result"] for r in records if r["Model"] == LLM] == [REAL[1], REAL[1]]


def test_nothing_non_finite_is_published(refreshed):
    con = refreshed["con"]
    columns = [name for name, kind in con.execute("select column_name, data_type from information_schema.columns "
                                                  "where table_name = 'fct_inference_result'").fetchall()
               if kind == "DOUBLE"]
    assert "mlcommons_performance_result" in columns
    for column in columns:
        assert con.execute(f"select count(*) from fct_inference_result where isnan({column}) or isinf({column})"
                           ).fetchone() == (0,), column
    table = dict(con.execute("select model, mlcommons_performance_result from fct_inference_result "
                             "where round = 'v5.1'").fetchall())
    assert [table[m] for m in ("resnet", "retinanet", "bert-99")] == [None, None, None]
    reasons = " ".join(_quarantine(con, "v5.1").values())
    assert reasons.count("mlcommons_performance_result failed") == 3
    unet = con.execute("select performance_result, invalid_reason, latency_p99_ms from fct_inference_result "
                       "where model = '3d-unet-99'").fetchone()
    assert unet[0] is None and "the value read is nan" in unet[1] and unet[2] is None


def test_a_path_held_twice_is_read_once_and_quarantined_by_name(refreshed):
    con = refreshed["con"]
    reasons = _quarantine(con, "v5.1")
    for path in TWICE:
        assert f"'inference_results_v5.1-main/{path}': the archive holds this path more than once; its first copy " \
               "is read" in reasons[path], path
    assert con.execute("select performance_result from fct_inference_result where model = 'resnet' and round = "
                       "'v5.1'").fetchone() == (6607.08,)
    assert con.execute("select system_name from dim_inference_system where round = 'v5.1'").fetchall() == [
        ("Acme Box",)]


def test_a_round_past_its_deadline_keeps_its_previous_data_and_says_so_in_one_line(refreshed, tmp_path, monkeypatch):
    """The same round again, now with a summary that takes longer to read than the deadline allows."""
    site, base = tmp_path / "site", copy_warehouse(refreshed["base"], tmp_path / "warehouse")
    site.mkdir()
    write_archive(site / URL.format(version="v5.1"), good_round(), {NEWLINES: (b"\n", 1 << 30)})
    before = refreshed["con"].execute("select location, performance_result from fct_inference_result "
                                      "where round = 'v5.1' order by location").fetchall()
    for name, value in {"MLPERF_WAREHOUSE_DIR": str(base), "MLPERF_SCORING_DEADLINE_SECONDS": "0.5",
                        "MLPERF_MAX_MEMBER_BYTES": str(2 << 30)}.items():
        monkeypatch.setenv(name, value)
    with LoopbackServer(site) as server:
        started = time.perf_counter()
        summary = refresh(refresh_settings(inference_rounds=["v5.1"],
                                           inference_results_url_template=f"{server.url}/{URL}"),
                          prices=False, backoff_seconds=0.01)
    step = next(s for s in summary.steps if s.name == "results Inference v5.1")
    assert not summary.ok and not step.ok and step.seconds < 30 and time.perf_counter() - started < 120
    assert "\n" not in step.detail and step.detail.endswith(
        "v5.1: reading its archive did not finish within 0.5 s (MLPERF_SCORING_DEADLINE_SECONDS); the round keeps "
        "its previous data"), step.detail
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        assert con.execute("select location, performance_result from fct_inference_result where round = 'v5.1' "
                           "order by location").fetchall() == before


def test_non_finite_figures_are_written_raw_as_a_hostile_table_writes_them(refreshed):
    """The inputs above are what they claim: the table's literals are not JSON's and parse to NaN and ±inf."""
    import tarfile

    with tarfile.open(refreshed["site"] / URL.format(version="v5.1")) as tar:
        text = tar.extractfile("inference_results_v5.1-main/summary_results.json").read().decode()
    figures = [row["Performance_Result"] for row in json.loads(text)][:3]
    assert math.isnan(figures[0]) and figures[1] == figures[2] == math.inf
