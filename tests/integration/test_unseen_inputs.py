"""What nobody here has seen, injected into a copy of a real shared round: an unknown round name (no release,
nor the default branch, ships its rules: scored provisionally, saying so), a system copied under a new name
with an accelerator no table knows, a benchmark no ruleset knows, a precision the accelerator has no peak
for. A refresh over real HTTP, with the price lists and a fake of GitHub's API for mlcommons/logging, must
publish with exit 0; identical logs must give identical scores whatever they are called."""

from __future__ import annotations

import re
import shutil
from importlib import metadata

import duckdb
import pytest

from pipelines.lib.warehouse.coverage import render_coverage
from pipelines.runner.jobs import refresh
from support.github import DEFAULT_HEAD, serve_logging_repository
from support.http_server import LoopbackServer
from support.injected import SystemCopy, inject
from support.paths import SHARED_MLPERF, needs_shared_mlperf
from support.price_site import refresh_environment
from support.refresh import refresh_settings

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared]

SOURCE = SHARED_MLPERF / "training_results_v4.1-main.tar.gz"
NEW_ROUND = "v5.9"  # no rules ship it: the default branch's newest older folder (training_5.1.0) scores it
HEAD = DEFAULT_HEAD[0]
SYSTEM = ("NVIDIA", "eos_ngc24.09_nemo")  # 8 H100s, llama2_70b_lora among its benchmarks
NEW_ACCELERATOR = "NVIDIA Z900-SXM 512GB"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    if not SOURCE.exists():
        pytest.skip(f"{SOURCE} not found")
    copies = (
        SystemCopy(*SYSTEM, "zeta_n8", accelerator=NEW_ACCELERATOR),
        SystemCopy(*SYSTEM, "zeta_n8_newbench", accelerator=NEW_ACCELERATOR,
                   benchmarks={"llama2_70b_lora": "llama9_lora"}, only_benchmarks=("llama2_70b_lora",)),
        SystemCopy(*SYSTEM, "h100_fp4", only_benchmarks=("llama2_70b_lora",)),
        *(SystemCopy(*SYSTEM, f"h100_states_{value}", only_benchmarks=("llama2_70b_lora",))
          for value in STATED_PRECISIONS),
    )
    inject(SOURCE, site / f"training_results_{NEW_ROUND}-main.tar.gz", round_name=NEW_ROUND, copies=copies,
           edit=_state_precisions)
    shutil.copytree(SHARED_MLPERF / "logging", site / "logging")
    base = tmp_path_factory.mktemp("unseen") / "warehouse"
    with LoopbackServer(site) as server, LoopbackServer() as prices:
        serve_logging_repository(server)
        with refresh_environment(base, prices, github_api_url=server.url) as with_prices:
            summary = refresh(refresh_settings(rounds=[NEW_ROUND],
                                               results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                               rules_url_template=f"{server.url}/logging/logging-{{ref}}.tar.gz"),
                              prices=with_prices, backoff_seconds=0.01)
    yield base, summary


# copies whose logs state their lowest precision in the 6.0 rules' MLLOG line: a spelling of FP8 the shared rounds
# never use, and a format no spelling maps (flagged, never guessed)
STATED_PRECISIONS = {"e4m3": "fp8", "mxfp6": None}


def _state_precisions(path: str, data: bytes) -> bytes:
    """The `h100_fp4` copy's logs state `fp4: true` before run_start (an H100 has no FP4 peak); each
    `h100_states_<value>` copy's logs state `lowest_numerical_precision_in_linear: <value>` after run_start."""
    if "/results/h100_fp4/llama2_70b_lora/result_" in path:
        return re.sub(rb"(?m)^(.*)(:::MLLOG .*\"key\": \"run_start\")", rb"0:   fp4: true\n\1\2", data, count=1)
    for value in STATED_PRECISIONS:
        if f"/results/h100_states_{value}/llama2_70b_lora/result_" in path:
            line = (':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": '
                    f'"lowest_numerical_precision_in_linear", "value": "{value}", "metadata": {{}}}}\n').encode()
            return re.sub(rb"(?m)^(.*:::MLLOG .*\"key\": \"run_start\".*\n)", lambda m, added=line: m.group(1) + added,
                          data, count=1)
    return data


def test_a_round_with_unseen_names_publishes_with_exit_0(built):
    base, summary = built
    assert summary.ok and summary.published, summary.render()
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    assert con.execute("select count(*) from fct_training_result where round = ?", [NEW_ROUND]).fetchone()[0] > 100
    # provisional, and every result says by which release and why
    rules = con.execute("select distinct rules_provisional, rules_provisional_reason, ruleset_ref from fct_training_result "
                        "where round = ?", [NEW_ROUND]).fetchall()
    assert len(rules) == 1 and rules[0][0] and rules[0][2] == HEAD, rules
    assert rules[0][1].startswith(f"judged by training_5.1.0 of {HEAD[:12]} (default_branch), not v5.9's own rules")
    assert any(s.name == f"results {NEW_ROUND}" and s.ok and s.warning and "PROVISIONAL" in s.detail
               for s in summary.steps), summary.render()
    coverage = next(row for row in summary.coverage if row["round"] == NEW_ROUND)  # the summary's coverage line
    assert coverage["provisional"] == rules[0][1] and "PROVISIONAL:" in summary.render()
    # today's package ships no rules of the round: no verdict under today's rules, never another round's
    why = (f"rules: today's rules (mlperf-logging=={metadata.version('mlperf-logging')}) ship none of {NEW_ROUND} "
           "(their nearest: training_5.1.0), so they give it no verdict")
    runs = con.execute("select count(*), count(*) filter (where scored), count(*) filter (where scored_current_rules), "
                       "count(*) filter (where current_rules_drop_reason = ?) from fct_training_run where round = ?",
                       [why, NEW_ROUND]).fetchone()
    assert runs[0] == runs[3] > runs[1] > 0 and runs[2] == 0, runs
    scores = con.execute("select count(score_minutes), count(score_minutes_current_rules), "
                         "count(*) filter (where current_rules_drop_reason = ?) from fct_training_result "
                         "where round = ?", [why, NEW_ROUND]).fetchone()
    assert scores[0] == scores[2] > 0 and scores[1] == 0, scores
    assert any(s.name == f"results {NEW_ROUND}" and s.warning and f"NO SCORE UNDER TODAY'S RULES: {why[7:]}" in s.detail
               for s in summary.steps), summary.render()
    assert coverage["rejected_by_current_rules"] == scores[0] and coverage["current_rules_missing"] == why[7:]
    (line,) = render_coverage([coverage])
    assert f"; today's rules give its {scores[0]} published scores no verdict: they ship none of its rules;" in line
    assert "would reject" not in line and " ".join(line.split()) in " ".join(summary.render().split())
    # the new accelerator is named by a warning, never a failure
    assert any(s.name == "check unmapped_accelerators" and s.warning and NEW_ACCELERATOR in s.detail
               for s in summary.steps), summary.render()


def test_identical_logs_give_identical_scores_whatever_they_are_called(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    pairs = con.execute("""
        select o.benchmark, o.score_minutes, c.score_minutes, o.rcp_scaling_factor, c.rcp_scaling_factor,
               o.score_minutes_current_rules, c.score_minutes_current_rules, c.duplicate_of
        from fct_training_result as o
        join fct_training_result as c on c.round = o.round and c.submitter = o.submitter
            and c.benchmark = o.benchmark and c.system = 'zeta_n8'
        where o.round = ? and o.submitter = ? and o.system = ?""", [NEW_ROUND, *SYSTEM]).fetchall()
    assert len(pairs) == 2  # llama2_70b_lora and stable_diffusion
    for benchmark, original, copy, factor, copy_factor, current, copy_current, duplicate_of in pairs:
        assert (original, factor, current) == (copy, copy_factor, copy_current), benchmark
        assert duplicate_of == "/".join(SYSTEM)  # flagged as the same runs, scored alike
    system = con.execute("select accelerator, accelerator_mapping, accelerator_memory_gb from dim_system "
                         "where round = ? and system = 'zeta_n8'", [NEW_ROUND]).fetchone()
    assert system == (None, "unmapped", 512)  # memory read off the name


def test_a_benchmark_no_ruleset_knows_or_retired_is_unscored_with_that_reason(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    reasons = dict(con.execute(
        "select benchmark, any_value(no_score_reason) from fct_training_result where round = ? "
        "and score_minutes is null group by 1", [NEW_ROUND]).fetchall())
    assert re.fullmatch(rf"rules: no rules for benchmark 'llama9_lora' in training_5\.1\.0 of {HEAD} "
                        r"\(a benchmark these rules do not know\)", reasons["llama9_lora"])
    # v4.1's gpt3 is in no rule folder of the default branch's training_5.1.0: retired there
    assert reasons["gpt3"].startswith(f"rules: no rules for benchmark 'gpt3' in training_5.1.0 of {HEAD} (retired: "
                                      "last in training_4.1.0)")
    # every benchmark the newest rules have no file for says so; a known one whose runs fail says that
    for benchmark in ("gnn", "ssd", "stable_diffusion"):
        assert reasons[benchmark].startswith(f"rules: no rules for benchmark '{benchmark}' in training_5.1.0"), reasons
    # the default branch's training_5.1.0 has a bert file but no longer lists bert among its benchmarks
    assert reasons["bert"].startswith(f"rules: no rules for benchmark 'bert' in training_5.1.0 of {HEAD} (not among "
                                      "the benchmarks its submission_benchmark check allows"), reasons["bert"]
    # the unknown benchmark's runs are still measured in the units their keys name (samples_count)
    runs = con.execute("select count(*), count(samples_to_converge), any_value(throughput_unit), "
                       "count(steady_state_throughput) from fct_training_run where benchmark = 'llama9_lora'").fetchone()
    assert runs[0] == 10 and runs[1] == 10 and runs[2] == "samples/s" and runs[3] == 10


def test_a_precision_the_accelerator_has_no_peak_for_nulls_mfu_with_the_reason(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    row = con.execute("select precision, precision_source, mfu, mfu_null_reason from mart_utilization "
                      "where round = ? and system = 'h100_fp4' and benchmark = 'llama2_70b_lora'", [NEW_ROUND]).fetchone()
    assert row is not None, "the copy's llama2_70b_lora result is scored under the newest rules"
    assert row == ("fp4", "log", None, "no dense FP4 peak for nvidia-h100-sxm-80gb in dim_accelerator")


def test_a_precision_stated_in_a_new_spelling_is_read_and_one_nobody_maps_is_flagged(built):
    base, summary = built
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    rows = {system: row for system, *row in con.execute(
        "select system, precision, precision_source, precision_evidence, mfu, mfu_null_reason from mart_utilization "
        "where round = ? and system like 'h100_states_%'", [NEW_ROUND]).fetchall()}
    fp8 = rows["h100_states_e4m3"]
    assert fp8[:2] == ["fp8", "log"] and fp8[2].endswith("lowest_numerical_precision_in_linear: e4m3") and fp8[3] > 0
    unmapped = rows["h100_states_mxfp6"]
    assert unmapped[:2] == [None, "unmapped_statement"] and unmapped[3] is None and "mxfp6" in unmapped[4]
    # a warning naming the runs, never a failure
    assert any(s.name == "check fct_training_run_precision_unmapped" and s.warning and "h100_states_mxfp6" in s.detail
               for s in summary.steps), summary.render()
