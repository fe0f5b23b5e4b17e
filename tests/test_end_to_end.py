"""All shared rounds served over real HTTP on 127.0.0.1, materialized by Dagster into a temp warehouse,
then checked score by score against what the official scorer printed."""

import csv
import math
import os
from collections import defaultdict

import duckdb
import pytest
from conftest import SHARED_MLPERF, needs_shared_mlperf
from support.http_server import LoopbackServer

from pipelines.lib.refresh_job import refresh

pytestmark = needs_shared_mlperf()
ROUNDS = sorted(p.name.split("_")[2].split("-")[0] for p in SHARED_MLPERF.glob("training_results_v*.tar.gz"))
OFFICIAL_ROUNDS = sorted(p.name.split("_")[0] for p in (SHARED_MLPERF / "official").glob("v*_summary.csv"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("e2e") / "warehouse"
    old = os.environ.get("MLPERF_WAREHOUSE_DIR")
    os.environ["MLPERF_WAREHOUSE_DIR"] = str(base)
    try:
        with LoopbackServer(SHARED_MLPERF) as server:
            first = refresh(ROUNDS, url_template=f"{server.url}/training_results_{{version}}-main.tar.gz", prices=False)
            fetched_first = len(server.requests)
            second = refresh(ROUNDS, url_template=f"{server.url}/training_results_{{version}}-main.tar.gz", prices=False)
            requests = list(server.requests[fetched_first:])
        yield base, first, second, requests
    finally:
        if old is None:
            os.environ.pop("MLPERF_WAREHOUSE_DIR", None)
        else:
            os.environ["MLPERF_WAREHOUSE_DIR"] = old


def test_all_rounds_load_and_quarantine_is_counted(built):
    base, first, _, _ = built
    assert first.ok and first.published, first.render()
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    loaded = {r for (r,) in con.execute("select distinct round from fct_training_run").fetchall()}
    assert loaded == set(ROUNDS)
    per_round = dict(con.execute("select partition, count(*) from fct_quarantine group by 1").fetchall())
    print("quarantine per round:", per_round)
    assert per_round["v0.6"] > 0  # v0.6 ships system files that are log text, not JSON
    # Every quarantined system file is also visible as missing from dim_system, not silently dropped.
    assert con.execute("select count(*) from fct_quarantine where reason like 'system description%'").fetchone()[0] > 0


def test_second_refresh_downloads_and_rebuilds_nothing(built):
    _, _, second, requests = built
    assert second.ok and not second.published
    assert {m for m, _, _ in requests} == {"GET"}
    assert all("if-none-match" in h or "if-modified-since" in h for _, _, h in requests)
    assert all("unchanged upstream; not re-parsed" in s.detail for s in second.steps if s.name.startswith("results"))


def _official(round_version):
    with open(SHARED_MLPERF / "official" / f"{round_version}_summary.csv") as fh:
        reader = csv.DictReader(fh)
        cols = reader.fieldnames
        benchmarks = cols[cols.index("private_id") + 1: cols.index("details_url")]
        for row in reader:
            parts = row["details_url"].split("/")
            yield (parts[-3], parts[-1].removesuffix(".json")), {
                b: (float(row[b]) if row[b] else None) for b in benchmarks
            }


def _close(a, b):
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-6))


@pytest.mark.parametrize("round_version", OFFICIAL_ROUNDS)
def test_scores_match_the_official_scorer(built, round_version):
    base = built[0]
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    ours = defaultdict(dict)  # (declared submitter, system file stem) → folder → benchmark → score
    for declared, folder, system, benchmark, score in con.execute(
        "select coalesce(s.submitter_declared, r.submitter), r.submitter, r.system, "
        "case r.benchmark when 'mask' then 'maskrcnn' else r.benchmark end, r.score_minutes "
        "from fct_training_result r left join dim_system s using (round, submitter, system) where r.round = ?",
        [round_version],
    ).fetchall():
        ours[(declared, system)].setdefault(folder, {})[benchmark] = score
    compared = scored = 0
    for key, official_scores in _official(round_version):
        candidates = ours.get(key, {})
        if not candidates:  # a system folder with no result files (not copied: >= 4 MiB) has no rows
            assert all(v is None for v in official_scores.values()), f"{round_version} {key}: no results here"
            compared += len(official_scores)
            continue
        # Several submitter folders can publish the same system file (e.g. smc, smc-ac-power):
        # the official row must match one of them on every benchmark.
        match = next(
            (folder for folder, scores in candidates.items()
             if all(_close(scores.get(b), v) for b, v in official_scores.items())),
            None,
        )
        assert match is not None, f"{round_version} {key}: official {official_scores} vs ours {candidates}"
        candidates.pop(match)
        compared += len(official_scores)
        scored += sum(v is not None for v in official_scores.values())
    print(f"{round_version}: {scored} official scores matched, {compared - scored} empty cells matched as NULL")
    assert scored > 100
