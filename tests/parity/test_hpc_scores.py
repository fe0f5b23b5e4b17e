"""MLPerf HPC: every shared HPC round refreshed with the Training rounds (support.shared_build), checked
against today's official scorer (mlperf/official/hpc: strong scores, and the weak-scaling section
that follows them in the same file) and for properties that hold on any round."""

import csv
import io
import re
from pathlib import Path

import duckdb
import pytest

from support.paths import SHARED_MLPERF, needs_shared_mlperf
from support.shared_build import shared_build, shared_hpc_rounds

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared, pytest.mark.shared_build]
OFFICIAL_HPC = SHARED_MLPERF / "official" / "hpc"
HPC_ROUNDS = shared_hpc_rounds()


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    build = shared_build(tmp_path_factory)
    assert build.ok and build.published, build.summary
    with duckdb.connect(str(build.db), read_only=True) as connection:
        yield connection


def official_sections(path: Path) -> list[list[dict]]:
    """The scorer's summary file: the strong-scaling table, then (from a second header on) the weak one."""
    lines = path.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("division,")]
    return [list(csv.DictReader(io.StringIO("\n".join(lines[a:b]))))
            for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]


def official_cases() -> list[tuple]:
    """(round, system stem, scale, benchmark, expected) for every score the official scorer printed."""
    cases = []
    for path in sorted(OFFICIAL_HPC.glob("hpc_v*_summary.csv")):
        round_version = path.name.split("_")[1]
        for section in official_sections(path):
            for row in section:
                stem = re.search(r"/systems/([^/]+)\.json$", row["details_url"]).group(1)
                for column, value in row.items():
                    if not value or column.split(":")[0] not in ("cosmoflow", "deepcam", "oc20", "openfold"):
                        continue
                    benchmark, _, metric = column.partition(":")
                    scale = "weak" if metric else "strong"
                    cases.append((round_version, stem, scale, benchmark, metric or "time_to_train", float(value)))
    return cases


CASES = official_cases()
COLUMNS = {"time_to_train": "score_minutes_current_rules", "number_of_models": "number_of_models_current_rules",
           "instance_scale": "instance_scale", "time_to_train_all": "time_to_train_all_minutes"}


def test_the_reference_has_strong_and_weak_scores_of_two_rounds():
    assert {(c[0], c[2]) for c in CASES} == {("v1.0", "strong"), ("v1.0", "weak"), ("v3.0", "strong"), ("v3.0", "weak")}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}")
def test_hpc_scores_equal_the_official_scorer(con, case):
    round_version, stem, scale, benchmark, metric, expected = case
    rows = con.execute(f"select {COLUMNS[metric]}, score_minutes from fct_hpc_result where round = ? and system = ? "
                       "and scale = ? and benchmark = ?", [round_version, stem, scale, benchmark]).fetchall()
    assert len(rows) == 1, (case, rows)
    got = rows[0][0]
    assert got is not None and abs(got - expected) <= 1e-9 * expected, (case, rows)
    if metric == "time_to_train":  # each round's own HPC rules give the same score on these logs
        assert rows[0][1] is not None and abs(rows[0][1] - expected) <= 1e-9 * expected, (case, rows)


def test_every_hpc_round_loads_in_its_own_tables(con):
    loaded = {r for (r,) in con.execute("select distinct round from fct_hpc_result").fetchall()}
    assert loaded == set(HPC_ROUNDS)
    # Training's tables hold no HPC row: HPC v1.0 and Training v1.0 share a name, not a benchmark
    hpc_benchmarks = ("cosmoflow", "deepcam", "oc20", "openfold")
    assert con.execute("select count(*) from fct_training_result where benchmark in ?", [hpc_benchmarks]).fetchone()[0] == 0
    assert con.execute("select count(*) from fct_hpc_result where suite <> 'hpc'").fetchone()[0] == 0
    hpc_quarantine = con.execute("select count(*) from fct_quarantine where source = 'mlperf-hpc'").fetchone()[0]
    assert hpc_quarantine > 0  # pruned_results files of v1.0 and v3.0, each with its reason


def test_nothing_is_lost(con):
    """Every run of the archives is a run row; every result folder is a result row."""
    missing = con.execute("""
        select r.round, r.submitter, r.system, r.scale, r.benchmark from fct_hpc_run as r
        anti join fct_hpc_result as x using (round, submitter, system, scale, benchmark)""").fetchall()
    assert missing == []
    import tarfile

    for round_version in HPC_ROUNDS:
        with tarfile.open(SHARED_MLPERF / "hpc" / f"hpc_results_{round_version}-main.tar.gz") as tar:
            logs = {m.name.split("/", 1)[1] for m in tar if re.search(r"/result_\d+\.txt$", m.name)}
        runs = {f for (f,) in con.execute("select run_file from fct_hpc_run where round = ?", [round_version]).fetchall()}
        quarantined = {f for (f,) in con.execute("select file from fct_quarantine where source = 'mlperf-hpc' "
                                                 "and partition = ?", [round_version]).fetchall()}
        assert logs == runs | quarantined and not runs & quarantined, round_version


def test_every_result_has_its_metric_or_a_reason(con):
    strong = con.execute("select round, system, benchmark from fct_hpc_result where scale = 'strong' "
                         "and (score_minutes is null) = (no_score_reason is null)").fetchall()
    weak = con.execute("select round, system, benchmark from fct_hpc_result where scale = 'weak' "
                       "and (models_per_minute is null) = (throughput_null_reason is null)").fetchall()
    assert strong == [] and weak == []
    # no figure under today's rules says why in its own row
    silent = con.execute("select round, system, scale, benchmark from fct_hpc_result "
                         "where coalesce(score_minutes_current_rules, models_per_minute_current_rules) is null "
                         "and current_rules_drop_reason is null").fetchall()
    assert silent == []
    # weak throughput is its inputs' quotient, for every weak result that has one
    bad = con.execute("""select round, system, benchmark from fct_hpc_result where scale = 'weak'
        and models_per_minute is not null and abs(models_per_minute - number_of_models / time_to_train_all_minutes)
            > 1e-12 * models_per_minute""").fetchall()
    assert bad == []
    counts = dict(con.execute("select scale, count(models_per_minute) + count(score_minutes) from fct_hpc_result "
                              "where round <> 'v0.7' group by 1").fetchall())
    assert counts["strong"] > 0 and counts["weak"] > 0


def test_a_round_older_than_every_hpc_ruleset_is_not_scored(con):
    if "v0.7" not in HPC_ROUNDS:
        pytest.skip("HPC v0.7 is not in ../shared")
    rows = con.execute("select score_minutes, score_minutes_current_rules, no_score_reason, ruleset_ref "
                       "from fct_hpc_result where round = 'v0.7'").fetchall()
    assert rows and all(s is None and c is None and "postdate" in why and ref == "1.1.0-rc4" for s, c, why, ref in rows)
    # its runs are still there, with the nearest rules' verdict
    assert con.execute("select count(*) from fct_hpc_run where round = 'v0.7' and scale_implied").fetchone()[0] > 0


def test_cpu_only_supercomputers_are_kept_with_zero_accelerators(con):
    rows = con.execute("select accelerator_count, accelerator_mapping, accelerator from dim_hpc_system "
                       "where system like 'fugaku%'").fetchall()
    assert rows and all(count == 0 and mapping == "cpu_only" and acc is None for count, mapping, acc in rows)
    unmapped = con.execute("select round, system, accelerator_model_name from dim_hpc_system "
                           "where accelerator_mapping = 'unmapped'").fetchall()
    assert unmapped == [], unmapped  # every GPU of the shared HPC rounds maps to a known part


def test_the_mlcommons_summary_holds_every_published_hpc_result(tmp_path_factory, con):
    import json

    from pipelines.lib.warehouse.exports import export
    from pipelines.lib.warehouse.mlcommons_summary import check_record

    build = shared_build(tmp_path_factory)
    out = tmp_path_factory.mktemp("summary")
    export(out, "mlcommons-summary", None, build.base)
    records = [r for r in json.loads((out / "summary_results.json").read_text()) if r["Suite"] == "hpc"]
    expected = con.execute("select count(*) from fct_hpc_result "
                           "where coalesce(score_minutes, models_per_minute) is not null").fetchone()[0]
    assert len(records) == expected > 0
    assert [p for r in records for p in check_record(r)] == []
    assert {(r["Scenario"], r["Performance_Units"]) for r in records} == {("strong", "minutes"), ("weak", "models/min")}
    assert len({r["ID"] for r in records}) == len(records)
    assert all(r["Details"].startswith("https://github.com/mlcommons/hpc_results_v") for r in records)
