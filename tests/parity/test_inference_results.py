"""MLPerf Inference, refreshed with the Training and HPC rounds and the price lists (support.shared_build):
every row of MLCommons' own summary_results.json is matched by its Location with an equal result, and
the pricing holds its properties (a price row behind every price, plausible or flagged, a reason for the rest)."""

import decimal
import json
import tarfile

import duckdb
import pytest

from support.paths import PROJECT_ROOT, SHARED_MLPERF, needs_shared_mlperf
from support.shared_build import shared_build, shared_inference_rounds

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared, pytest.mark.shared_build]
ROUNDS = shared_inference_rounds()


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    if not ROUNDS:
        pytest.skip("no MLPerf Inference archive in ../shared/mlperf/inference")
    build = shared_build(tmp_path_factory)
    assert build.ok and build.published, build.summary
    with duckdb.connect(str(build.db), read_only=True) as connection:
        yield connection


def mlcommons_table(round_version: str) -> list[dict]:
    with tarfile.open(SHARED_MLPERF / "inference" / f"inference_results_{round_version}-main.tar.gz") as tar:
        member = next(m for m in tar if m.name.endswith("/summary_results.json"))
        return json.load(tar.extractfile(member))


def printed_decimals(value: float) -> int:
    """The decimals the table prints a figure with: its shortest representation (8840.42: 2; 101611.0: 0)."""
    return max(0, -decimal.Decimal(repr(float(value))).normalize().as_tuple().exponent)


def equal_as_printed(ours: float | None, theirs: float) -> bool:
    """Our value, rounded to the digits the table prints, is the table's figure."""
    return ours is not None and float(decimal.Decimal(repr(ours)).quantize(
        decimal.Decimal(1).scaleb(-printed_decimals(theirs)), rounding=decimal.ROUND_HALF_EVEN)) == theirs


@pytest.mark.parametrize("round_version", ROUNDS)
def test_every_row_of_mlcommons_table_is_a_result_with_the_same_value(con, round_version):
    table = mlcommons_table(round_version)
    ours = {r[0]: r[1:] for r in con.execute(
        "select location, performance_result, performance_units, mlcommons_units, valid, performance_log "
        "from fct_inference_result where round = ?", [round_version]).fetchall()}
    mismatched, relabelled, read_from = [], set(), {}
    for row in table:
        got = ours.get(row["Location"])
        want = row["Performance_Result"]
        if got is None or not equal_as_printed(got[0], want) or got[2] != row["Performance_Units"] or not got[3]:
            mismatched.append((row["Location"], want, row["Performance_Units"], got))
        elif got[1] != got[2]:
            relabelled.add((row["Model"], row["Scenario"], got[1], got[2]))
        if got is not None:
            read_from[got[4]] = read_from.get(got[4], 0) + 1
            if got[4] == "mlperf_log_detail.txt" and got[0] != want:  # the checker's own figure, to the last bit
                mismatched.append((row["Location"], want, "read from the detail log", got))
    print(f"{round_version}: {len(table) - len(mismatched)} of {len(table)} results equal MLCommons' table as printed; "
          f"read from {read_from}")
    assert mismatched == [] and len(table) > 0
    check = (PROJECT_ROOT / "sql" / "tests" / "fct_inference_result_matches_mlcommons.sql").read_text()
    assert [row for row in con.execute(check).fetchall() if row[0] == round_version] == []  # the build's own check
    # where the table's label is not what its value counts, the warehouse says so (inference_models.csv)
    assert relabelled <= {("whisper", "Offline", "Tokens/s", "Samples/s"),
                          ("llama3.1-8b", "Interactive", "Tokens/s", "Queries/s")}, relabelled
    # nothing MLCommons does not list is published as a valid result, and every result is a row of ours
    extra = con.execute("select count(*) from fct_inference_result where round = ? and valid and location <> all(?)",
                        [round_version, [r["Location"] for r in table]]).fetchone()[0]
    assert extra == 0


def test_every_result_is_valid_or_says_why_and_units_follow_the_scenario(con):
    assert con.execute("select count(*) from fct_inference_result where valid = (invalid_reason is not null)"
                       ).fetchone()[0] == 0
    # a value for every result LoadGen judged VALID, or one specific reason; the detail log read wherever it exists
    shares = con.execute("""select f.round, f.division, count(*), count(f.performance_result),
            count(*) filter (where f.performance_result is null and f.performance_null_reason is null),
            count(*) filter (where f.detail_file is not null and f.performance_log <> 'mlperf_log_detail.txt')
        from fct_inference_result as f join stg_inference_results as s using (round, location)
        where s.result_valid group by all""").fetchall()
    for round_version, division, total, with_value, unexplained, detail_unread in shares:
        print(f"{round_version} {division}: a value for {with_value} of {total} results LoadGen judged VALID")
        assert with_value >= 0.99 * total and unexplained == 0 and detail_unread == 0
    bad_units = con.execute("""select location, scenario, performance_units from fct_inference_result where valid and
        not (scenario in ('SingleStream', 'MultiStream') and performance_units = 'Latency (ms)'
             or scenario = 'Offline' and performance_units in ('Tokens/s', 'Samples/s')
             or scenario in ('Server', 'Interactive') and performance_units in ('Tokens/s', 'Queries/s'))""").fetchall()
    assert bad_units == []
    # LLM Server and Interactive results met a time-to-first-token and a time-per-output-token limit
    unbounded = con.execute("""select location from fct_inference_result where valid and performance_units = 'Tokens/s'
        and scenario in ('Server', 'Interactive') and (ttft_limit_ms is null or tpot_limit_ms is null
        or ttft_p99_ms > ttft_limit_ms * 1.5)""").fetchall()
    assert unbounded == []


def test_prices_per_million_have_their_price_row_and_are_plausible_or_flagged(con):
    rows = con.execute("""select count(*), count(usd_per_million),
            count(*) filter (where usd_per_million is not null and (provider is null or sku is null
                or price_per_accelerator_hour_usd is null or source_url is null)),
            count(*) filter (where usd_per_million is null and no_cost_reason is null),
            count(*) filter (where unit = 'tokens' and usd_per_million not between 0.001 and 100
                and plausibility_flag is null)
        from mart_inference_cost""").fetchone()
    total, priced, without_row, without_reason, unflagged = rows
    assert priced > 0 and without_row == 0 and without_reason == 0 and unflagged == 0, rows
    # the headline is a bookable price, never a marketplace's
    kinds = {k for (k,) in con.execute("""select distinct o.provider_kind from mart_inference_cost as c
        join mart_price_offer as o using (provider, sku, region, pricing_model)
        where c.usd_per_million is not null""").fetchall()}
    assert kinds and "marketplace" not in kinds
    # usd_per_million is the system's hourly price over an hour of its throughput, per million
    off = con.execute("""select count(*) from mart_inference_cost where usd_per_million is not null and
        abs(usd_per_million - system_usd_per_hour / (performance_result * 3600) * 1e6) > 1e-9 * usd_per_million""").fetchone()[0]
    assert off == 0
    share = con.execute("""select count(c.usd_per_million) * 1.0 / count(*) from mart_inference_cost as c
        join dim_inference_system as s using (round, division, submitter, system)
        where c.division = 'closed' and c.unit = 'tokens' and s.system_type like '%datacenter%'""").fetchone()[0]
    print(f"closed datacenter LLM results with a price per million tokens: {share:.1%}")
    assert share > 0.5


def test_the_inference_report_lists_each_valid_result_cheapest_first(con, tmp_path_factory):
    import re

    from pipelines.cli import main

    build = shared_build(tmp_path_factory)
    out = tmp_path_factory.mktemp("inference_report")
    assert main(["report", "--suite", "inference", "--round", "v5.1", "--model", "llama2-70b-99", "--scenario",
                 "Server", "--out", str(out), "--warehouse-dir", str(build.base)]) == 0
    html = (out / "inference_v5.1.html").read_text()
    valid = con.execute("select count(*) from fct_inference_result where round = 'v5.1' and valid "
                        "and model = 'llama2-70b-99' and scenario = 'Server'").fetchone()[0]
    assert html.count("<tr><td>") == valid
    prices = [float(p) for p in re.findall(r'<td class="num">\$([\d.]+)</td>', html)]
    assert prices and prices == sorted(prices)
    assert "data:image/svg+xml;base64," in html and "<script" not in html  # self-contained, no code
    assert main(["report", "--suite", "inference", "--round", "v9.9", "--out", str(out),
                 "--warehouse-dir", str(build.base)]) == 2


def test_the_mlcommons_summary_export_reproduces_mlcommons_inference_records(con, tmp_path_factory):
    from pipelines.lib.warehouse.exports import export
    from pipelines.lib.warehouse.mlcommons_summary import check_record

    build = shared_build(tmp_path_factory)
    out = tmp_path_factory.mktemp("summary")
    export(out, "mlcommons-summary", None, build.base)
    records = {r["Location"]: r for r in json.loads((out / "summary_results.json").read_text())
               if r["ID"].startswith("inference-")}
    assert [p for r in records.values() for p in check_record(r)] == []
    for round_version in ROUNDS:
        table = mlcommons_table(round_version)
        assert {r["Location"] for r in table} <= set(records)
        differ = []
        for theirs in table:
            ours = records[theirs["Location"]]
            for field in ("Submitter", "Availability", "Category", "Suite", "Platform", "Model", "UsedModel",
                          "Scenario", "Nodes", "Performance_Units", "has_power", "Power_Result", "Power_Units"):
                if ours.get(field) != theirs.get(field):
                    differ.append((theirs["Location"], field, ours[field], theirs[field]))
            if theirs["a#"] != "" and ours["a#"] != theirs["a#"]:  # MLCommons leaves CPU-only systems' count empty
                differ.append((theirs["Location"], "a#", ours["a#"], theirs["a#"]))
            if ours["System"] != theirs["System"].strip():
                differ.append((theirs["Location"], "System", ours["System"], theirs["System"]))
        assert differ == []


@pytest.mark.parametrize("round_version", ROUNDS)
def test_power_results_carry_the_audited_power_and_their_energy_per_unit(con, round_version):
    table = {r["Location"]: r for r in mlcommons_table(round_version) if r.get("has_power")}
    ours = {loc: (w, per_unit, perf, units) for loc, w, per_unit, perf, units in con.execute(
        "select location, power_w, joules_per_unit, performance_result, performance_units from fct_inference_result "
        "where round = ? and power_w is not null", [round_version]).fetchall()}
    assert set(ours) == {loc for loc, r in table.items() if r.get("Power_Units") == "Watts"} and ours
    for location, (watts, per_unit, perf, units) in ours.items():
        assert watts == table[location]["Power_Result"]
        assert units != "Latency (ms)" and abs(per_unit - watts / perf) <= 1e-12 * per_unit
    # every power result without a figure says why; the WARN check comparing with MLCommons' figures is silent
    assert con.execute("select count(*) from fct_inference_result where power_submission and power_w is null "
                       "and power_null_reason is null").fetchone()[0] == 0
    assert con.execute("select count(*) from fct_inference_result where round = ? and mlcommons_performance_result "
                       "is null", [round_version]).fetchone()[0] == 0
