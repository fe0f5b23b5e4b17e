"""The factor a score is multiplied by, on a copy of the real v5.0: identical logs give identical scores
whatever the system is called (a copy of the logs without their scaling.json takes the factor published with
the same runs), and a result that ships no scaling.json is scored as the summarizer prints it, with the factor
the round's RCP checker would write beside it, computed from the logs and the release's RCP files."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.runner.jobs import refresh
from support.http_server import LoopbackServer
from support.injected import SystemCopy, inject
from support.paths import SHARED_MLPERF, needs_shared_mlperf
from support.refresh import refresh_settings

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared]

SOURCE = SHARED_MLPERF / "training_results_v5.0-main.tar.gz"
ORIGINAL = ("AMD", "MI300X_EPYC_9575F_pytorch")  # llama2_70b_lora, scaling.json 1.0347222
BARE = ("AMD", "MI325X_EPYC_9575F_pytorch")  # its scaling.json dropped below


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    inject(SOURCE, site / "training_results_v5.0-main.tar.gz",
           copies=(SystemCopy(*ORIGINAL, "renamed_box", without=("scaling.json",)),),
           drop_original=(f"{BARE[0]}/results/{BARE[1]}/llama2_70b_lora/scaling.json",))
    base = tmp_path_factory.mktemp("factors") / "warehouse"
    with pytest.MonkeyPatch.context() as env, LoopbackServer(site) as server, \
            LoopbackServer(SHARED_MLPERF) as releases:
        env.setenv("MLPERF_WAREHOUSE_DIR", str(base))
        summary = refresh(refresh_settings(rounds=["v5.0"],
                                           results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                           rules_url_template=f"{releases.url}/logging/logging-{{ref}}.tar.gz"),
                          prices=False, backoff_seconds=0.01)
    assert summary.ok and summary.published, summary.render()
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        yield {system: row for system, *row in con.execute(
            "select system, score_minutes, rcp_scaling_factor, rcp_scaling_source, rcp_check, "
            "rcp_scaling_factor_computed, score_minutes_current_rules from fct_training_result "
            "where benchmark = 'llama2_70b_lora' and submitter = 'AMD'").fetchall()}


def test_identical_logs_give_identical_scores_whatever_the_system_is_called(built):
    original, copy = built[ORIGINAL[1]], built["renamed_box"]
    assert copy[0] == pytest.approx(original[0], rel=1e-12) and copy[0] == pytest.approx(29.250206814236105)
    assert copy[1] == original[1] == pytest.approx(1.034722222222222)
    assert original[2] == "scaling.json" and copy[2] == f"same_runs: {'/'.join(ORIGINAL)}"
    assert copy[5] == original[5]  # today's rules alike


def test_a_result_without_scaling_json_is_scored_as_published_with_the_rcp_factor_beside_it(built):
    score, factor, source, check, computed, _ = built[BARE[1]]
    assert (factor, source, check) == (1.0, "none", "Pass")
    # the factor the v5.0 release's RCP checker would write for these logs is the one MLCommons published
    assert computed == pytest.approx(1.0511463844797178)
    assert built[ORIGINAL[1]][4] == pytest.approx(1.034722222222222)
