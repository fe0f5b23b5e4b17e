"""An MLPerf Inference round nobody has seen (v6.0), made from a copy of the real v5.1 with an open division
(which ../shared leaves out), a model no table knows, a lowercase scenario folder and an accelerator nobody
maps. Refreshed over real HTTP: it publishes, nothing is lost, and what cannot be priced says why."""

from __future__ import annotations

import json
import tarfile

import duckdb
import pytest

from pipelines.runner.jobs import refresh
from support.http_server import LoopbackServer
from support.injected import add_member, inject
from support.paths import SHARED_MLPERF, needs_shared_mlperf

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared]

SOURCE = SHARED_MLPERF / "inference" / "inference_results_v5.1-main.tar.gz"
NEW_ROUND = "v6.0"
SYSTEM = "closed/Nebius/results/B200-SXM-180GBx8_TRT"  # a real folder of the shared round (checked: `added`)
NEW_ACCELERATOR = "NVIDIA Z900-SXM 512GB"


def _copy(source, target) -> dict[str, int]:
    """The round renamed, and the system's llama2-70b-99 results copied into open/ as model `llama9-1t`
    (its Server folder spelled `server`) on a system with an unknown accelerator. Returns what was added."""
    added = {"results": 0, "systems": 0}
    with tarfile.open(source) as src, tarfile.open(target, "w:gz", compresslevel=1) as out:
        for info in src:
            top, _, rest = info.name.partition("/")
            data = src.extractfile(info).read() if info.isfile() else None
            top = f"inference_results_{NEW_ROUND}-main"
            add_member(out, info, f"{top}/{rest}" if rest else top, data)
            if data is None:
                continue
            if rest.startswith(f"{SYSTEM}/llama2-70b-99/") and "/performance/run_1/" in rest:
                scenario = rest.split("/")[5]
                new = rest.replace("closed/", "open/", 1).replace("/llama2-70b-99/", "/llama9-1t/").replace(
                    "B200-SXM-180GBx8_TRT", "zeta_z900").replace(f"/{scenario}/", f"/{scenario.lower()}/")
                add_member(out, info, f"inference_results_{NEW_ROUND}-main/{new}", data)
                added["results"] += rest.endswith("/mlperf_log_summary.txt")  # one summary (and detail log) a result
            if rest == "closed/Nebius/systems/B200-SXM-180GBx8_TRT.json":
                doc = json.loads(data)
                doc |= {"accelerator_model_name": NEW_ACCELERATOR, "division": "open", "system_name": "Zeta Z900"}
                add_member(out, info, f"inference_results_{NEW_ROUND}-main/open/Nebius/systems/zeta_z900.json",
                     json.dumps(doc).encode())
                added["systems"] += 1
    return added


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not SOURCE.exists():
        pytest.skip(f"{SOURCE} not found")
    site = tmp_path_factory.mktemp("inference-site")
    added = _copy(SOURCE, site / f"inference_results_{NEW_ROUND}-main.tar.gz")
    assert added["results"] > 0 and added["systems"] == 1, added
    base = tmp_path_factory.mktemp("inference-unseen") / "warehouse"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MLPERF_WAREHOUSE_DIR", str(base))
        with LoopbackServer(site) as server:
            summary = refresh([], inference_rounds=[NEW_ROUND],
                              inference_url_template=f"{server.url}/inference_results_{{version}}-main.tar.gz",
                              prices=False, backoff_seconds=0.01)
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        yield con, summary, added


def test_an_unseen_round_with_an_open_division_publishes_and_loses_nothing(built):
    con, summary, added = built
    assert summary.ok and summary.published, summary.render()
    closed = con.execute("select count(*) from fct_inference_result where round = ? and division = 'closed'",
                         [NEW_ROUND]).fetchone()[0]
    assert closed == 609  # every result of the copied round
    rows = con.execute("""select f.model, f.scenario, s.scenario_folder, f.performance_units, f.valid,
            f.accelerator_model_name
        from fct_inference_result as f join stg_inference_results as s using (round, location)
        where f.round = ? and f.division = 'open' order by f.scenario""", [NEW_ROUND]).fetchall()
    assert len(rows) == added["results"]
    assert all(m == "llama9-1t" and units == "Tokens/s" and valid and acc == NEW_ACCELERATOR
               for m, _s, _f, units, valid, acc in rows), rows
    assert {(s, f) for _m, s, f, *_ in rows} >= {("Server", "server")}  # the folder's case does not matter
    unknown = con.execute("select count(*) from stg_inference_results where round = ? and not model_known",
                          [NEW_ROUND]).fetchone()[0]
    assert unknown == added["results"]  # flagged: its unit was read from its summaries


def test_an_unmapped_accelerator_is_not_priced_and_says_why(built):
    con, _, _ = built
    reasons = {r for (r,) in con.execute("select distinct no_cost_reason from mart_inference_cost "
                                         "where division = 'open'").fetchall()}
    assert reasons == {"accelerator not mapped to a dim_accelerator key"}
    assert con.execute("select accelerator_mapping from dim_inference_system where system = 'zeta_z900'"
                       ).fetchone() == ("unmapped",)


def test_a_round_without_mlcommons_table_publishes_every_result_and_flags_its_power_results(tmp_path, warehouse):
    """Not every round's archive ships MLCommons' summary_results.json: every result is still derived from its
    LoadGen summaries, and each power result says why it has no power figure (the table is its one source)."""
    if not SOURCE.exists():
        pytest.skip(f"{SOURCE} not found")
    site = tmp_path / "site"
    site.mkdir()
    round_name = "v4.9"  # no rules, no table: nothing about it is known beforehand
    inject(SOURCE, site / f"inference_results_{round_name}-main.tar.gz", round_name=round_name,
           repository="inference_results", drop_original=("summary_results.json",))
    with LoopbackServer(site) as server:
        summary = refresh([], inference_rounds=[round_name],
                          inference_url_template=f"{server.url}/inference_results_{{version}}-main.tar.gz",
                          prices=False, backoff_seconds=0.01)
    assert summary.ok and summary.published, summary.render()
    with duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True) as con:
        results, derived, table, power, flagged = con.execute("""
            select count(*), count(performance_result), count(mlcommons_performance_result),
                   count(*) filter (where power_submission),
                   count(*) filter (where power_submission and power_w is null and power_null_reason like
                                    'a power result, but the archive ships no MLCommons table%')
            from fct_inference_result where round = ?""", [round_name]).fetchone()
    assert (results, derived, table) == (609, 609, 0)
    assert power > 0 and flagged == power
