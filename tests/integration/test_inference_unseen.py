"""MLPerf Inference rounds holding what nobody has seen, made from copies of the real v5.1 and refreshed over real
HTTP, together:

- `v5.1` with injections (its own checker facts and MLCommons' table): one system's detail logs removed (the summary
  is read), one system's LLM summaries stripped of their token lines as older rounds print them (the detail log
  still gives the value), one system with both (no value, a reason each); an open division (which ../shared leaves
  out) with a model no table knows, a model folder its submitter's model_mapping.json maps, and an edge system's
  SingleStream run copied into `offline`, `multistream`, `Interactive` and `Server` folders;
- `v9.0`, a round no checker facts know, without MLCommons' table.

It publishes; every value is MLCommons' (to its printed digits), or what the checker derives, or NULL with one
specific reason; results without a price say why."""

from __future__ import annotations

import decimal
import json
import re
import tarfile
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.mlperf.inference_summary import parse_summary
from pipelines.runner.jobs import refresh
from support.http_server import LoopbackServer
from support.injected import add_member
from support.paths import PROJECT_ROOT, SHARED_MLPERF, needs_shared_mlperf
from support.refresh import refresh_settings

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared]

SOURCE = SHARED_MLPERF / "inference" / "inference_results_v5.1-main.tar.gz"
ROUND, UNSEEN = "v5.1", "v9.0"
NO_DETAIL = "closed/Quanta_Cloud_Technology/results/D74U-7U_H200-SXM-141GBx8_TRT/"
STRIPPED = "closed/HPE/results/HPE_Cray_XD670_H200_SXM_141GBx8_TRT/"  # LLM summaries without their token lines
STRIPPED_NO_DETAIL = "closed/Cisco/results/C885_H200x8_TRT/"
LLM_SOURCE = "closed/Nebius/results/B200-SXM-180GBx8_TRT/llama2-70b-99/"
EDGE_SOURCE = "closed/Lenovo/results/SE100_RTX2000E_Ada_16GBx1_TRT/resnet50/SingleStream/"
NEW_ACCELERATOR = "NVIDIA Z900-SXM 512GB"
# An open division: the LLM results copied as a model nobody knows and as a folder the submitter maps
UNKNOWN_MODEL, MAPPED_FOLDER = "llama9-1t", "llama2-70b-fp4-custom"
OPEN_LLM = "open/Nebius/results/zeta_z900/"
OPEN_EDGE = "open/Lenovo/results/se100_copy/resnet50/"
FOLDERS_FOR_A_SINGLESTREAM_RUN = ("offline", "multistream", "Interactive", "Server")
TOKEN_LINES = re.compile(rb"^(Completed tokens per second|Tokens per second)\b.*\n", re.M)


def _write(out: tarfile.TarFile, info: tarfile.TarInfo, top: str, rest: str, data: bytes | None) -> None:
    add_member(out, info, f"{top}/{rest}" if rest else top, data)


def _injected(target: Path) -> dict[str, list[str]]:
    """SOURCE as round v5.1 with the injections above; returns the locations added or changed, by kind."""
    added: dict[str, list[str]] = {"no_detail": [], "stripped": [], "stripped_no_detail": [], "unknown": [],
                                   "mapped": [], "edge": []}
    top = f"inference_results_{ROUND}-main"
    with tarfile.open(SOURCE) as src, tarfile.open(target, "w:gz", compresslevel=1) as out:
        for info in src:
            rest = info.name.partition("/")[2]
            data = src.extractfile(info).read() if info.isfile() else None
            location = "/".join(rest.split("/")[:6])
            is_detail, is_summary = rest.endswith("run_1/mlperf_log_detail.txt"), rest.endswith(
                "run_1/mlperf_log_summary.txt")
            if is_detail and rest.startswith((NO_DETAIL, STRIPPED_NO_DETAIL)):
                added["no_detail" if rest.startswith(NO_DETAIL) else "stripped_no_detail"].append(location)
                continue
            if is_summary and rest.startswith((STRIPPED, STRIPPED_NO_DETAIL)):
                data = TOKEN_LINES.sub(b"", data)
                if rest.startswith(STRIPPED):
                    added["stripped"].append(location)
            _write(out, info, top, rest, data)
            if data is None:
                continue
            if rest.startswith(LLM_SOURCE) and "/performance/run_1/" in rest:
                scenario = rest.split("/")[5]
                for folder, kind in ((UNKNOWN_MODEL, "unknown"), (MAPPED_FOLDER, "mapped")):
                    new = f"{OPEN_LLM}{folder}/{scenario.lower()}/" + rest.split("/", 6)[6]
                    _write(out, info, top, new, data)
                    if new.endswith("summary.txt"):
                        added[kind].append("/".join(new.split("/")[:6]))
            if rest.startswith(EDGE_SOURCE) and "/performance/run_1/" in rest:
                for folder in FOLDERS_FOR_A_SINGLESTREAM_RUN:
                    new = f"{OPEN_EDGE}{folder}/" + rest.split("/", 6)[6]
                    _write(out, info, top, new, data)
                    if new.endswith("summary.txt"):
                        added["edge"].append("/".join(new.split("/")[:6]))
            if rest == "closed/Nebius/systems/B200-SXM-180GBx8_TRT.json":
                doc = json.loads(data) | {"accelerator_model_name": NEW_ACCELERATOR, "division": "open",
                                          "system_name": "Zeta Z900"}
                _write(out, info, top, "open/Nebius/systems/zeta_z900.json", json.dumps(doc).encode())
                _write(out, info, top, "open/Nebius/model_mapping.json",
                       json.dumps({MAPPED_FOLDER: "llama2-70b-99"}).encode())
            if rest == "closed/Lenovo/systems/SE100_RTX2000E_Ada_16GBx1_TRT.json":
                doc = json.loads(data) | {"division": "open"}
                _write(out, info, top, "open/Lenovo/systems/se100_copy.json", json.dumps(doc).encode())
    assert all(added.values()), {k: len(v) for k, v in added.items()}
    return added


def _unseen(target: Path) -> None:
    """SOURCE as a round no checker facts know, without MLCommons' table."""
    with tarfile.open(SOURCE) as src, tarfile.open(target, "w:gz", compresslevel=1) as out:
        for info in src:
            rest = info.name.partition("/")[2]
            if rest != "summary_results.json":
                _write(out, info, f"inference_results_{UNSEEN}-main", rest,
                       src.extractfile(info).read() if info.isfile() else None)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not SOURCE.exists():
        pytest.skip(f"{SOURCE} not found")
    site = tmp_path_factory.mktemp("inference-site")
    added = _injected(site / f"inference_results_{ROUND}-main.tar.gz")
    _unseen(site / f"inference_results_{UNSEEN}-main.tar.gz")
    base = tmp_path_factory.mktemp("inference-unseen") / "warehouse"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MLPERF_WAREHOUSE_DIR", str(base))
        with LoopbackServer(site) as server:
            summary = refresh(refresh_settings(inference_rounds=[ROUND, UNSEEN],
                                               inference_results_url_template=f"{server.url}/inference_results_{{version}}-main.tar.gz"),
                              prices=False, backoff_seconds=0.01)
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        yield con, summary, added


def results(con, where: str = "true", params: tuple = ()) -> dict[str, dict]:
    cur = con.execute(f"""select * from fct_inference_result as f
        join (select round, location, model_known, model_folder, scenario_folder, result_valid
              from stg_inference_results) as s using (round, location) where {where}""", list(params))
    names = [d[0] for d in cur.description]
    return {(r["round"], r["location"]): r for r in (dict(zip(names, row, strict=True)) for row in cur.fetchall())}


def source_table() -> dict[str, float]:
    with tarfile.open(SOURCE) as tar:
        member = next(m for m in tar if m.name.endswith("/summary_results.json"))
        return {r["Location"]: r["Performance_Result"] for r in json.load(tar.extractfile(member))}


def source_summary(location: str) -> dict[str, str]:
    with tarfile.open(SOURCE) as tar:
        member = tar.getmember(f"inference_results_{ROUND}-main/{location}/performance/run_1/mlperf_log_summary.txt")
        return parse_summary(tar.extractfile(member).read().decode())


def decimals(value: float) -> int:
    """The decimals a figure is printed with (its shortest representation)."""
    return max(0, -decimal.Decimal(repr(float(value))).normalize().as_tuple().exponent)


def test_both_rounds_publish_and_every_result_has_a_value_or_one_specific_reason(built):
    con, summary, added = built
    assert summary.ok and summary.published, summary.render()
    rows = results(con)
    assert sum(1 for r, d in rows if r == ROUND and d.startswith("closed/")) == 609  # every result of the round
    assert sum(1 for r, _ in rows if r == UNSEEN) == 609
    assert {loc for kind in ("unknown", "mapped", "edge") for loc in added[kind]} <= {d for _, d in rows}
    for row in rows.values():
        assert (row["performance_result"] is None) == (row["performance_null_reason"] is not None), row
        assert row["valid"] == (row["invalid_reason"] is None), row
        if row["performance_result"] is None:  # one sentence naming the key or the line that is missing
            assert re.search(r"result_\w+|'[^']+'|scenario", row["performance_null_reason"]), row
            assert row["performance_null_reason"] in row["invalid_reason"]
        else:
            assert row["performance_units"] and row["performance_source"].startswith(row["performance_log"]), row
    for (rnd, division), share in _value_shares(rows).items():
        print(f"{rnd} {division}: a value for {share:.1%} of the results LoadGen judged VALID")
        assert share >= 0.99 or (rnd, division) == (ROUND, "closed")  # the injected round loses one system on purpose


def _value_shares(rows: dict) -> dict[tuple[str, str], float]:
    counts: dict[tuple[str, str], list[int]] = {}
    for row in rows.values():
        if row["result_valid"]:
            c = counts.setdefault((row["round"], row["division"]), [0, 0])
            c[0] += 1
            c[1] += row["performance_result"] is not None
    return {k: with_value / total for k, (total, with_value) in counts.items()}


def test_results_with_a_detail_log_equal_mlcommons_table_to_the_last_digit_even_with_stripped_summaries(built):
    con, _, added = built
    table = source_table()
    rows = results(con, "round = ? and division = 'closed'", (ROUND,))
    detail_read = [r for r in rows.values() if r["performance_log"] == "mlperf_log_detail.txt"]
    assert len(detail_read) >= 500
    assert [r["location"] for r in detail_read if r["performance_result"] != table[r["location"]]] == []
    stripped = [rows[(ROUND, loc)] for loc in added["stripped"]]
    assert stripped and all(r["performance_result"] == table[r["location"]] for r in stripped)


def test_results_without_a_detail_log_read_the_summary_and_agree_with_the_table_at_the_coarser_precision(built):
    con, _, added = built
    table = source_table()
    rows = results(con, "round = ?", (ROUND,))
    for location in added["no_detail"]:
        row = rows[(ROUND, location)]
        assert row["performance_log"] == "mlperf_log_summary.txt" and "(no detail log)" in row["performance_source"]
        want = table[location]
        places = min(decimals(want), decimals(row["performance_result"]))
        assert abs(row["performance_result"] - want) <= 1.5 * 10 ** -places, (location, row["performance_result"], want)


def test_the_check_against_mlcommons_table_names_what_was_injected_and_nothing_read_from_a_detail_log(built):
    con, _, added = built
    check = (PROJECT_ROOT / "sql" / "tests" / "fct_inference_result_matches_mlcommons.sql").read_text()
    flagged = {location: log for rnd, location, *_, log, _source in con.execute(check).fetchall() if rnd == ROUND}
    nulls = {loc for loc, in con.execute("select location from fct_inference_result where round = ? and "
                                         "performance_result is null", [ROUND]).fetchall()}
    assert nulls and nulls <= set(flagged) <= set(added["no_detail"]) | set(added["stripped_no_detail"])
    assert "mlperf_log_detail.txt" not in flagged.values()


def test_a_stripped_summary_without_a_detail_log_has_no_value_and_names_the_missing_line(built):
    con, _, added = built
    rows = results(con, "round = ?", (ROUND,))
    llm = [rows[(ROUND, loc)] for loc in added["stripped_no_detail"]
           if rows[(ROUND, loc)]["performance_units"] is None]
    assert llm, "the stripped LLM throughput results"
    for row in llm:
        assert row["performance_result"] is None and not row["valid"]
        assert re.match(r"no detail log and the summary prints no '(Completed tokens|Tokens) per second'",
                        row["performance_null_reason"]), row["performance_null_reason"]
    # their latency and sample results still have a value, from the summary
    others = [rows[(ROUND, loc)] for loc in added["stripped_no_detail"] if rows[(ROUND, loc)] not in llm]
    assert all(r["performance_log"] == "mlperf_log_summary.txt" for r in others)


def test_an_open_division_maps_models_as_the_checker_does_and_an_unknown_one_gets_its_default_metric(built):
    con, _, added = built
    table = source_table()
    rows = results(con, "round = ? and division = 'open'", (ROUND,))
    for location in added["mapped"]:
        row = rows[(ROUND, location)]
        original = LLM_SOURCE + row["scenario_folder"].capitalize()
        original = original if original in table else LLM_SOURCE + row["scenario"]
        assert (row["model"], row["model_mapped_by"]) == ("llama2-70b-99", "the submitter's model_mapping.json")
        assert row["performance_result"] == table[original] and row["performance_units"] == "Tokens/s"
    for location in added["unknown"]:
        row = rows[(ROUND, location)]
        assert (row["model"], row["model_known"], row["model_mapped_by"]) == (UNKNOWN_MODEL, False, None)
        # the checker's metric for a model it does not know: the scenario's samples (queries) per second
        assert row["performance_units"] in ("Samples/s", "Queries/s") and row["valid"], row
        assert row["tokens_per_second"] > row["performance_result"]  # the tokens are kept beside it
    assert {rows[(ROUND, loc)]["scenario"] for loc in added["unknown"]} >= {"Server"}  # the `server` folder


def test_a_singlestream_run_in_other_scenario_folders_gets_what_the_checker_derives(built):
    con, _, added = built
    rows = results(con, "round = ?", (ROUND,))
    source = source_summary(EDGE_SOURCE.rstrip("/"))
    by_folder = {rows[(ROUND, loc)]["scenario_folder"]: rows[(ROUND, loc)] for loc in added["edge"]}
    offline, multistream = by_folder["offline"], by_folder["multistream"]
    assert (offline["scenario"], offline["inferred"], offline["performance_units"]) == ("Offline", True, "Samples/s")
    assert round(offline["performance_result"], 2) == float(source["QPS w/o loadgen overhead"])
    assert (multistream["inferred"], multistream["performance_units"]) == (True, "Latency (ms)")
    assert multistream["performance_result"] == int(source["Early stopping 99.0th percentile estimate"]) * 8 / 1e6
    assert offline["valid"] and multistream["valid"]
    interactive = by_folder["Interactive"]
    assert not interactive["valid"] and "an Interactive folder must hold a Server run" in interactive["invalid_reason"]
    server = by_folder["Server"]  # checker v5.1 tables the run's own metric in a folder it cannot convert to
    assert server["valid"] and not server["inferred"] and "unconverted" in server["performance_source"]
    assert server["performance_result"] == int(source["Early stopping 90.0th percentile estimate"]) / 1e6


def test_a_round_no_checker_knows_uses_the_newest_facts_flagged_and_flags_its_power_results(built):
    con, _, _ = built
    rows = results(con, "round = ?", (UNSEEN,))
    assert {(r["checker_version"], r["checker_version_assumed"]) for r in rows.values()} == {("v6.0", True)}
    assert all(r["mlcommons_performance_result"] is None for r in rows.values())
    power = [r for r in rows.values() if r["power_submission"]]
    assert power and all(r["power_w"] is None and r["power_null_reason"].startswith(
        "a power result, but the archive ships no MLCommons table") for r in power)
    assert all(r["performance_result"] is not None for r in rows.values())


def test_an_unmapped_accelerator_is_not_priced_and_says_why(built):
    con, summary, _ = built
    check = next(s for s in summary.steps if s.name == "check unmapped_accelerators")
    assert check.warning and f"Inference {ROUND} Nebius zeta_z900: '{NEW_ACCELERATOR}'" in check.detail, check.detail
    reasons = {r for (r,) in con.execute("select distinct no_cost_reason from mart_inference_cost "
                                         "where division = 'open' and system = 'zeta_z900'").fetchall()}
    assert reasons == {"accelerator not mapped to a dim_accelerator key"}
    assert con.execute("select accelerator_mapping from dim_inference_system where system = 'zeta_z900'"
                       ).fetchone() == ("unmapped",)
