"""An MLPerf HPC round nobody has seen (v4.0, not in rules_refs.csv), made from a copy of the real v3.0 with a
system under a new name and an accelerator no table knows, and a benchmark no HPC ruleset knows. Refreshed
over real HTTP with `--suites hpc` semantics (HPC rounds only): it publishes, identical logs score alike,
and what cannot be scored says why."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.lib.mlperf.rules import ref_for_round
from pipelines.lib.mlperf.suites import HPC
from pipelines.runner.jobs import refresh
from support.http_server import LoopbackServer
from support.injected import SystemCopy, inject
from support.paths import SHARED_MLPERF, needs_shared_mlperf
from support.refresh import refresh_settings

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared]

SOURCE = SHARED_MLPERF / "hpc" / "hpc_results_v3.0-main.tar.gz"
NEW_ROUND = "v4.0"
NEW_ACCELERATOR = "NVIDIA Z900-SXM 512GB"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not SOURCE.exists():
        pytest.skip(f"{SOURCE} not found")
    site = tmp_path_factory.mktemp("hpc-site")
    copies = (
        SystemCopy("NVIDIA", "eos_n64_ngc23.09_pytorch", "zeta_n64", accelerator=NEW_ACCELERATOR),
        SystemCopy("NVIDIA", "eos_n80_ngc23.09_pytorch", "zeta_n80_newbench", benchmarks={"oc20": "catalyst9"}),
        SystemCopy("NVIDIA", "eos_n256_ngc23.09_pytorch", "zeta_weak", only_benchmarks=("oc20",)),
    )
    inject(SOURCE, site / f"hpc_results_{NEW_ROUND}-main.tar.gz", round_name=NEW_ROUND, copies=copies,
           repository="hpc_results")
    base = tmp_path_factory.mktemp("hpc-unseen") / "warehouse"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MLPERF_WAREHOUSE_DIR", str(base))  # read by the refresh when it starts
        with LoopbackServer(site) as results, LoopbackServer(SHARED_MLPERF) as rules:
            summary = refresh(refresh_settings(hpc_rounds=[NEW_ROUND],
                                               hpc_results_url_template=f"{results.url}/hpc_results_{{version}}-main.tar.gz",
                                               rules_url_template=f"{rules.url}/logging/logging-{{ref}}.tar.gz"),
                              prices=False, backoff_seconds=0.01)
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        yield con, summary


def test_an_unseen_hpc_round_publishes_scored_by_the_newest_hpc_rules(built):
    con, summary = built
    assert summary.ok and summary.published, summary.render()
    refs = {r for (r,) in con.execute("select distinct ruleset_ref from fct_hpc_result where round = ?",
                                      [NEW_ROUND]).fetchall()}
    assert refs == {ref_for_round("v3.0", suite=HPC).ref}
    # today's package ships none of the round's rules: no figure under them, and each result says so
    current = con.execute("select count(*), count(coalesce(score_minutes_current_rules, "
                          "models_per_minute_current_rules)), count(*) filter (where current_rules_drop_reason like "
                          "'%today''s rules (mlperf-logging==% ship none of HPC v4.0 %') from fct_hpc_result "
                          "where round = ?", [NEW_ROUND]).fetchone()
    assert current[0] > 0 and current[1:] == (0, current[0]), current
    assert con.execute("select count(*) from fct_training_result").fetchone()[0] == 0  # HPC only


def test_identical_logs_score_alike_whatever_the_system_is_called(built):
    con, _ = built
    pairs = con.execute("""
        select a.scale, a.benchmark, a.score_minutes, b.score_minutes, a.models_per_minute, b.models_per_minute
        from fct_hpc_result as a join fct_hpc_result as b using (round, scale, benchmark)
        where a.system = 'zeta_n64' and b.system = 'eos_n64_ngc23.09_pytorch'
           or a.system = 'zeta_weak' and b.system = 'eos_n256_ngc23.09_pytorch'""").fetchall()
    assert {(scale, benchmark) for scale, benchmark, *_ in pairs} == {("strong", "cosmoflow"), ("weak", "oc20")}
    for scale, benchmark, copy, original, copy_rate, original_rate in pairs:
        assert (copy, copy_rate) == (original, original_rate) and (original or original_rate), (scale, benchmark)
    mapping = con.execute("select accelerator_mapping, accelerator_model_name from dim_hpc_system "
                          "where system = 'zeta_n64'").fetchone()
    assert mapping == ("unmapped", NEW_ACCELERATOR)  # kept, with an accelerator nobody maps yet
    # and named by the WARN check of every suite's systems, as its suite labels the round
    summary = built[1]
    check = next(s for s in summary.steps if s.name == "check unmapped_accelerators")
    assert check.warning and f"HPC {NEW_ROUND} NVIDIA zeta_n64: '{NEW_ACCELERATOR}'" in check.detail, check.detail


def test_a_benchmark_no_hpc_ruleset_knows_is_unscored_with_its_reason(built):
    con, _ = built
    score, why = con.execute("select score_minutes, no_score_reason from fct_hpc_result "
                             "where system = 'zeta_n80_newbench' and benchmark = 'catalyst9'").fetchone()
    assert score is None and "no rules for benchmark 'catalyst9'" in why and "do not know" in why, why
