"""All shared rounds served over real HTTP on 127.0.0.1, materialized by Dagster into a temp warehouse,
then checked score by score against what the official scorer printed."""

import csv
import math
from collections import defaultdict

import duckdb
import pytest

from pipelines.runner.jobs import refresh
from support.github import serve_logging_repository
from support.http_server import LoopbackServer
from support.paths import SHARED_MLPERF, needs_shared_mlperf
from support.price_site import SHARED_PRICES
from support.refresh import refresh_settings
from support.shared_build import copy_of, shared_build, shared_rounds

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared, pytest.mark.shared_build]
ROUNDS = shared_rounds()
# What each round's own scorer printed → score_minutes; what today's package prints → score_minutes_current_rules.
REFERENCES = {"official_era": "score_minutes", "official": "score_minutes_current_rules"}
PARITY_CASES = sorted(
    (folder, p.name.split("_")[0]) for folder in REFERENCES for p in (SHARED_MLPERF / folder).glob("v*_summary.csv")
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every shared round, plus the shared price lists when present, refreshed over HTTP (once per pytest run:
    support.shared_build), as (warehouse directory, that build)."""
    build = shared_build(tmp_path_factory)
    return build.base, build


def test_all_rounds_load_and_quarantine_is_counted(built):
    base, first = built
    assert first.ok and first.published, first.summary
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    loaded = {r for (r,) in con.execute("select distinct round from fct_training_run").fetchall()}
    assert loaded == set(ROUNDS)
    per_round = dict(con.execute("select partition, count(*) from fct_quarantine group by 1").fetchall())
    print("quarantine per round:", per_round)
    assert per_round["v0.6"] > 0  # v0.6: Intel's logs print `{value: true}` (not JSON), Alibaba's no MLPerf lines
    # v0.6 NVIDIA system files are log text (`key: {json}` lines), read as such: none is quarantined.
    assert con.execute("select count(*) from fct_quarantine where reason like 'system description%'").fetchone()[0] == 0
    # Every round loads with scores, and every result of v0.5 and v0.6 has its system's division and count.
    per_round_results = {r: (n, s, c) for r, n, s, c in con.execute(
        "select round, count(*), count(score_minutes), count(*) filter (where division is not null "
        "and accelerator_count is not null) from fct_training_result group by 1").fetchall()}
    assert all(scored > 0 for _, scored, _ in per_round_results.values()), per_round_results
    for early in ("v0.5", "v0.6"):
        if early in per_round_results:
            results, _, described = per_round_results[early]
            assert described == results, (early, per_round_results[early])


def test_repeated_runs_are_flagged(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    rounds = {r for (r,) in con.execute("select distinct round from fct_training_result").fetchall()}
    if "v4.0" in rounds:  # smc, smc-ac-power and smc-dc-power publish the same runs
        dups = con.execute("select submitter, count(*) from fct_training_result where round = 'v4.0' "
                           "and duplicate_of is not null group by 1").fetchall()
        assert {s for s, _ in dups} == {"smc-ac-power", "smc-dc-power"}
    if {"v4.0", "v4.1"} <= rounds:
        carried = con.execute("select count(*) from fct_training_result where round = 'v4.1' "
                              "and carried_over_from = 'v4.0'").fetchone()[0]
        assert carried > 0
    # Flags only: a duplicate keeps its own score, which is its canonical result's (the same runs).
    pairs = con.execute(
        "select count(*), count(*) filter (where abs(d.score_minutes - c.score_minutes) > 1e-9 * c.score_minutes) "
        "from fct_training_result d join fct_training_result c on c.round = d.round and c.benchmark = d.benchmark "
        "and c.submitter || '/' || c.system = d.duplicate_of"
    ).fetchone()
    assert pairs[0] == con.execute("select count(duplicate_of) from fct_training_result").fetchone()[0]
    assert pairs[1] == 0
    assert con.execute("select count(*) from fct_training_run where log_sha256 is null").fetchone()[0] == 0


def test_every_systems_file_accelerator_maps_or_is_named(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    unmapped = con.execute(
        "select distinct round, accelerator_model_name from dim_system where accelerator_mapping = 'unmapped'"
    ).fetchall()
    assert unmapped == []
    deliberate = {n for (n,) in con.execute(
        "select distinct accelerator_model_name from dim_system where accelerator_mapping = 'deliberately_unmapped'"
    ).fetchall()}
    assert deliberate <= {"N/A", "NA", None}  # CPU-only submissions


def test_marts_hold_their_properties_on_the_shared_rounds(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    base_rows = con.execute(
        "select count(*), count(*) filter (where abs(convergence_scaling_efficiency - 1) > 1e-12) "
        "from mart_scaling_efficiency where system = base_system"
    ).fetchone()
    assert base_rows[0] > 100 and base_rows[1] == 0
    assert con.execute(
        "select count(*) from mart_scaling_efficiency where convergence_scaling_efficiency <= 0 "
        "or throughput_scaling_efficiency <= 0 or speedup <= 0"
    ).fetchone()[0] == 0
    scaled = con.execute("select count(*) from mart_scaling_efficiency "
                         "where accelerator_count > base_accelerator_count").fetchone()[0]
    assert scaled > 50
    # Trillium GPT-3 in v4.1 scales close to linearly in throughput (Google's own analysis: ~99 %).
    trillium = con.execute(
        "select min(throughput_scaling_efficiency) from mart_scaling_efficiency "
        "where round = 'v4.1' and benchmark = 'gpt3' and accelerator = 'google-tpu-v6e'"
    ).fetchone()[0]
    if trillium is not None:
        assert 0.9 < trillium <= 1.05
    # MFU against the peak of each result's own precision (FP8 where the logs say so): never above 1
    assert con.execute("select count(*) from mart_utilization where mfu <= 0 or mfu > 1").fetchone()[0] == 0
    assert con.execute("select count(*) from mart_utilization where precision = 'fp8' and mfu > 0").fetchone()[0] > 0
    if not SHARED_PRICES.is_dir():
        pytest.skip(f"shared price fixtures not found at {SHARED_PRICES}: cost marts not checked")
    costs = con.execute(
        "select count(*), count(*) filter (where cost_to_train_usd <= 0), "
        "max(abs(cost_to_train_usd - score_minutes / 60 * accelerator_count * price_per_accelerator_hour_usd)), "
        "count(*) filter (where is_native_cloud) from mart_cost_to_train"
    ).fetchone()
    assert costs[0] > 100 and costs[1] == 0 and costs[2] < 1e-6 and costs[3] > 0
    # Same price option, same score per chip: cost grows with accelerator count and with price.
    pairs = con.execute("""
        select count(*), count(*) filter (where b.cost_to_train_usd / a.cost_to_train_usd
            - (b.score_minutes * b.accelerator_count) / (a.score_minutes * a.accelerator_count) > 1e-9)
        from mart_cost_to_train a join mart_cost_to_train b
          on a.provider = b.provider and a.region = b.region and a.pricing_model = b.pricing_model
         and a.accelerator = b.accelerator and a.sku = b.sku and a.system <> b.system
    """).fetchone()
    assert pairs[0] > 0 and pairs[1] == 0


def test_mfu_is_measured_against_the_precision_the_logs_state(built):
    """Every result whose scored runs state their lowest numerical precision (the 6.0 rules' lines) is measured
    against that precision's peak, or flagged when no spelling maps it: never against an assumed BF16."""
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    rows = con.execute("""
        select u.round, u.system, u.benchmark, u.precision, u.precision_source, s.stated,
            u.peak_flops_used is not distinct from case u.precision when 'fp8' then u.peak_dense_fp8_flops
                when 'fp4' then u.peak_dense_fp4_flops when 'bf16' then u.peak_dense_bf16_flops
                when 'fp16' then u.peak_dense_bf16_flops end as own_peak
        from mart_utilization as u
        join (select round, submitter, system, benchmark, any_value(precision_logged) as stated
              from fct_training_run where scored and precision_statements is not null group by all) as s
            using (round, submitter, system, benchmark)""").fetchall()
    assert rows, "no shared result states its precision in the 6.0 rules' lines"
    wrong = [r for r in rows if r[4] not in ("log", "unmapped_statement") or (r[3] != r[5]) or not r[6]]
    assert wrong == []
    if "v6.0" in ROUNDS:  # AMD's MI355X llama2_70b_lora states mxfp4 in its linear layers
        assert ("v6.0", "MI355X_EPYC_9575F_primus", "llama2_70b_lora", "fp4", "log", "fp4", True) in rows


def test_units_are_what_they_say_on_every_shared_round(built):
    """samples_to_converge is samples: inside its benchmark's absolute bounds or NULL with a reason; one
    throughput unit per benchmark; every benchmark of every round has a median steady-state ÷ end-to-end
    ratio in [0.9, 1.5] or its throughputs NULL with the reason."""
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    outside = con.execute("""
        select r.round, r.run_file, r.samples_to_converge
        from fct_training_run as r join dim_benchmark as b using (benchmark)
        where r.samples_to_converge not between b.samples_to_converge_min and b.samples_to_converge_max""").fetchall()
    assert outside == []
    unexplained = con.execute("select round, run_file from fct_training_run where scored and samples_to_converge "
                              "is null and samples_to_converge_null_reason is null").fetchall()
    assert unexplained == []
    # MLLOG rounds (v0.7 on) have samples for nearly every scored run; v0.5's evaluations count no progress and
    # v0.6's translation benchmarks have no dataset size on record (each NULL above says so)
    shares = dict(con.execute("select round, avg((samples_to_converge is not null)::int) from fct_training_run "
                              "where scored and round_order(round) >= 7 group by 1").fetchall())
    assert all(share > 0.95 for share in shares.values()), shares
    # the early BERT logs that say epoch_num 1 at every evaluation: read from train_samples, in samples
    bert = con.execute("select min(samples_to_converge), count(*) filter (where convergence_source = "
                       "'train_samples after run_start') from fct_training_run where benchmark = 'bert' "
                       "and scored").fetchone()
    if bert[0] is not None:
        assert bert[0] > 100_000
    units = con.execute("select benchmark, count(distinct throughput_unit) from fct_training_run "
                        "group by 1 having count(distinct throughput_unit) > 1").fetchall()
    assert units == []
    medians = con.execute("""
        select round, benchmark, median(steady_to_end_to_end_ratio) filter (where scored) as m,
               count(*) filter (where throughput_null_reason like 'median%') as nulled, count(*) as runs
        from fct_training_run group by all""").fetchall()
    for round_version, benchmark, median, nulled, runs in medians:
        assert median is None or 0.9 <= median <= 1.5, (round_version, benchmark, median)
        assert nulled in (0, runs), (round_version, benchmark)
    # the SSD logs of the rounds that trained on COCO say so, and the dataset table agrees
    flags = con.execute("select round, samples_per_epoch_flag from fct_training_run where benchmark = 'ssd' "
                        "and samples_per_epoch_flag is not null").fetchall()
    assert flags == []


def test_scaling_labels_and_flags_mean_what_they_say(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    kinds = dict(con.execute("select scaling_kind, count(*) from mart_scaling_efficiency where is_scaling_pair "
                             "group by 1").fetchall())
    assert set(kinds) <= {"weak", "strong", "mixed", None} and kinds.get("weak", 0) > 0
    wrong = con.execute("""
        select round, system, scaling_kind from mart_scaling_efficiency where is_scaling_pair and (
            (scaling_kind = 'weak' and global_batch_size / base_global_batch_size < 0.9 * size_ratio)
            or (scaling_kind <> 'weak' and weak_scaling_efficiency is not null))""").fetchall()
    assert wrong == []
    # a stated cause never contradicts the value it explains
    contradictions = con.execute("""
        select round, system, throughput_scaling_efficiency, weak_scaling_flag from mart_scaling_efficiency
        where (weak_scaling_flag like 'per-accelerator batch shrinks%' and throughput_scaling_efficiency > 1)
           or (weak_scaling_flag like 'per-accelerator batch grows%' and throughput_scaling_efficiency < 1)""").fetchall()
    assert contradictions == []


def test_one_precision_per_software_stack(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    sources = {s for (s,) in con.execute("select distinct precision_source from mart_utilization").fetchall()}
    allowed = {v for (v,) in con.execute(
        "select value from raw_vocabulary_seed where vocabulary = 'precision_source'").fetchall()}
    assert sources <= allowed and "implied_by_throughput" not in sources
    # a stack measured against two precisions has log or system evidence for each of them, never a guess
    mixed = con.execute("""
        select u.round, u.submitter, u.benchmark, u.accelerator, s.framework_family
        from mart_utilization as u join dim_system as s using (round, submitter, system)
        where u.accelerator is not null
        group by all
        having count(distinct u.precision) > 1
            and count(*) filter (where u.precision_source in ('stack', 'assumed_bf16')) > 0
            and count(distinct u.precision) filter (where u.precision_source in ('log', 'system_description')) < 2
    """).fetchall()
    assert mixed == []


def test_cost_headline_is_a_price_anyone_can_book(built):
    if not SHARED_PRICES.is_dir():
        pytest.skip(f"shared price fixtures not found at {SHARED_PRICES}: cost marts not checked")
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    scored = con.execute("select count(*) from fct_training_result where score_minutes is not null").fetchone()[0]
    headline = con.execute("select count(*), count(cost_to_train_usd), count(*) filter (where provider_kind "
                           "= 'marketplace' or pricing_model = 'spot') from mart_cost_to_train_headline").fetchone()
    assert headline[0] == scored and headline[1] > 100 and headline[2] == 0
    # in each benchmark of the newest rounds, the cheapest headline cost is a bookable list price
    newest = con.execute("""
        select round, benchmark, arg_min(provider_kind, cost_to_train_usd), arg_min(pricing_model, cost_to_train_usd)
        from mart_cost_to_train_headline where cost_to_train_usd is not null group by all""").fetchall()
    assert all(kind in ("hyperscaler", "neocloud") and model != "spot" for _r, _b, kind, model in newest)


def test_names_have_one_spelling(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    twice = con.execute("select lower(organization), count(distinct organization) from dim_submitter "
                        "group by 1 having count(distinct organization) > 1").fetchall()
    assert twice == []
    spelled = dict(con.execute("select submitter, organization from dim_submitter").fetchall())
    for folder, organization in (("nvidia", "NVIDIA"), ("NVIDIA", "NVIDIA"), ("smc-ac-power", "Supermicro"),
                                 ("krai", "Krai"), ("google", "Google")):
        if folder in spelled:
            assert spelled[folder] == organization, folder
    assert con.execute("select count(*) from dim_system where division is null").fetchone()[0] == 0


def test_second_refresh_downloads_and_rebuilds_nothing(built, tmp_path, monkeypatch):
    base = copy_of(built[1], tmp_path / "warehouse")  # refreshed again: a copy of the shared build
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    with LoopbackServer(SHARED_MLPERF, port=built[1].port) as server:  # the same URLs as the first refresh
        serve_logging_repository(server)
        monkeypatch.setenv("MLPERF_GITHUB_API_URL", server.url)
        second = refresh(refresh_settings(rounds=ROUNDS,
                                          results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                          rules_url_template=f"{server.url}/logging/logging-{{ref}}.tar.gz"),
                         prices=False)
        requests = list(server.requests)
    assert second.ok and not second.published, second.render()
    assert {m for m, _, _ in requests} == {"GET"}
    assert all("if-none-match" in h or "if-modified-since" in h for _, _, h in requests)
    assert all("unchanged upstream; not re-parsed" in s.detail for s in second.steps if s.name.startswith("results"))


def _official(folder, round_version):
    with open(SHARED_MLPERF / folder / f"{round_version}_summary.csv") as fh:
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


DETAILED_ERA = sorted(p.name.split("_")[0] for p in (SHARED_MLPERF / "official_era").glob("v*_summary_detailed.csv"))


@pytest.mark.parametrize("round_version", DETAILED_ERA)
def test_the_detailed_summary_of_the_round_s_own_release(built, round_version):
    """RCP verdict, GBS and samples_to_converge as the round's own summarizer printed them in its detailed
    summary (6.0 on), for every result it lists."""
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    ours = {(d, s, b): row for d, s, b, *row in con.execute(
        "select coalesce(s.submitter_declared, r.submitter), r.system, r.benchmark, r.rcp_check, "
        "r.rcp_global_batch_size, r.rcp_samples_to_converge, r.score_minutes from fct_training_result r "
        "left join dim_system s using (round, submitter, system) where r.round = ?", [round_version]).fetchall()}
    compared = 0
    with open(SHARED_MLPERF / "official_era" / f"{round_version}_summary_detailed.csv") as fh:
        for row in csv.DictReader(fh):
            system = row["details_url"].split("/")[-1].removesuffix(".json")
            for column, value in row.items():
                if not column.endswith(":time_to_train") or not value:
                    continue
                benchmark = column.split(":")[0]
                check, gbs, samples, score = ours[(row["submitter"], system, benchmark)]
                assert check == (row[f"{benchmark}:RCP"] or None)
                assert _close(gbs, float(row[f"{benchmark}:GBS"]) if row[f"{benchmark}:GBS"] else None)
                assert _close(samples, float(row[f"{benchmark}:samples_to_converge"] or "nan")
                              if row[f"{benchmark}:samples_to_converge"] else None)
                assert _close(score, float(value))
                compared += 1
    assert compared > 0


@pytest.mark.parametrize("reference,round_version", PARITY_CASES)
def test_scores_match_the_official_scorer(built, reference, round_version):
    base = built[0]
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    ours = defaultdict(dict)  # (declared submitter, system file stem) → folder → benchmark → score
    for declared, folder, system, benchmark, score in con.execute(
        "select coalesce(s.submitter_declared, r.submitter), r.submitter, r.system, "
        "case r.benchmark when 'mask' then 'maskrcnn' else r.benchmark end, r." + REFERENCES[reference] + " "
        "from fct_training_result r left join dim_system s using (round, submitter, system) where r.round = ?",
        [round_version],
    ).fetchall():
        ours[(declared, system)].setdefault(folder, {})[benchmark] = score
    compared = scored = 0
    printed = 0  # the scores the reference printed
    official_keys = set()
    for key, official_scores in _official(reference, round_version):
        official_keys.add(key)
        printed += sum(v is not None for v in official_scores.values())
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
    print(f"{reference} {round_version}: {scored} scores matched, {compared - scored} empty cells matched as NULL")
    # every score the reference printed is ours, and we score no system the reference has no row for
    assert printed > 0 and scored == printed
    unprinted = [(key, folder, b) for key, folders in ours.items() if key not in official_keys
                 for folder, scores in folders.items() for b, v in scores.items() if v is not None]
    assert unprinted == [], f"{round_version}: scores the reference did not print: {unprinted[:5]}"


POWER_CASES = sorted(p.name.split("_")[0] for p in (SHARED_MLPERF / "official" / "power").glob("v*_summary_detailed.csv"))


@pytest.mark.parametrize("round_version", POWER_CASES)
def test_energy_matches_the_official_scorer(built, round_version):
    """Energy to train (J) equals the `<benchmark>:Energy` today's scorer printed, for every power result."""
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    ours = {(s, y, b): e for s, y, b, e in con.execute(
        "select submitter, system, benchmark, energy_to_train_j from fct_training_result where round = ?",
        [round_version]).fetchall()}
    compared = 0
    with open(SHARED_MLPERF / "official" / "power" / f"{round_version}_summary_detailed.csv") as fh:
        for row in csv.DictReader(fh):
            parts = row["details_url"].split("/")
            submitter, system = parts[-3], parts[-1].removesuffix(".json")
            for column, value in row.items():
                if column.endswith(":Energy") and value:
                    benchmark = column.split(":")[0]
                    assert _close(ours.get((submitter, system, benchmark)), float(value)), (
                        f"{round_version} {submitter}/{system} {benchmark}: official {value} J, "
                        f"ours {ours.get((submitter, system, benchmark))}")
                    compared += 1
    print(f"energy {round_version}: {compared} results matched the official scorer")
    assert compared > 0


def test_every_power_result_has_an_energy_or_a_reason(built):
    con = duckdb.connect(str(built[0] / "mlperf.duckdb"), read_only=True)
    silent = con.execute("""
        select round, submitter, system, benchmark from fct_training_result
        where (runs_with_power > 0 or lower(submitter || system) like '%power%')
          and energy_to_train_j is null and energy_null_reason is null""").fetchall()
    assert silent == []
    per_round = dict(con.execute("select round, count(energy_to_train_j) from fct_training_result group by 1").fetchall())
    for round_version in ("v4.0", "v4.1", "v5.0"):  # the shared power rounds (v4.0: by its own release's rules)
        if round_version in per_round:
            assert per_round[round_version] > 0, per_round
    # a run's energy is the sum of its logs': a node's is positive, a switch's never negative
    negative = "select count(*) from fct_power_log where energy_j < 0 or (kind = 'node' and energy_j <= 0)"
    assert con.execute(negative).fetchone()[0] == 0
    # mart_energy: one row per result with an energy; the mean power per accelerator (hosts and switches
    # included) within what a system can draw: no accelerator here has a TDP over 1,400 W (GB300), and no
    # system idles under 100 W per accelerator
    energy_rows, results, out_of_range = con.execute("""
        select (select count(*) from mart_energy), (select count(energy_to_train_j) from fct_training_result),
               (select count(*) from mart_energy where average_power_per_accelerator_w not between 100 and 3000)
    """).fetchone()
    assert energy_rows == results and out_of_range == 0
