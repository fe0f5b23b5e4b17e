"""MLPerf Inference: a performance run's detail log and summary → one result, as MLCommons' table states it; the
traps of real archives (older summary spellings, a folder holding another scenario's run, a model no table knows,
a result without a detail log). Logs are written the way LoadGen writes them."""

import json

import pytest

from pipelines.lib.mlperf.inference import accept
from pipelines.lib.mlperf.inference_detail import parse_detail
from pipelines.lib.mlperf.inference_result import result_row
from pipelines.lib.mlperf.inference_summary import parse_summary

SERVER_LLM = """================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : Server
Mode     : PerformanceOnly
Completed samples per second    : 29.41
Completed tokens per second: 8840.42
Result is : VALID
  Performance constraints satisfied : Yes
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: Yes
TTFT Early Stopping Result:
 * Run successful.
================================================
Additional Stats
================================================
99.00 percentile latency (ns)   : 30354675329
99.00 percentile first token latency (ns)   : 435976100
99.00 percentile time to output token (ns)   : 39507635
================================================
Test Parameters Used
================================================
target_qps : 29.5
ttft_latency (ns): 450000000
tpot_latency (ns): 40000000
"""

SINGLE_STREAM = """Scenario : SingleStream
Mode     : PerformanceOnly
90.0th percentile latency (ns) : 7626305
Result is : VALID
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: Yes
Early Stopping Result:
 * Processed at least 64 queries (79118).
 * Early stopping 90.0th percentile estimate: 7627156
 * Early stopping 99.0th percentile estimate: 7836918
================================================
Additional Stats
================================================
QPS w/ loadgen overhead         : 131.08
QPS w/o loadgen overhead        : 131.12
"""

LLM_SINGLE_STREAM = """Scenario : SingleStream
Mode     : PerformanceOnly
90.0th percentile latency (ns) : 3545895439
Result is : VALID
  Early stopping satisfied: Yes
TTFT Early Stopping Result:
 * Early stopping 90.0th percentile estimate: 272739682
TPOT Early Stopping Result:
 * Early stopping 90.0th percentile estimate: 26493158
Early Stopping Result:
 * Early stopping 90.0th percentile estimate: 3546000000
================================================
Additional Stats
================================================
90.00 percentile latency (ns)   : 3545895439
"""


def mllog(**records) -> bytes:
    """A detail log: one `:::MLLOG` record a key, as LoadGen prints them (six significant digits for doubles)."""
    meta = {"is_error": False, "is_warning": False, "file": "results.cc", "line_no": 1, "pid": 1, "tid": 1}
    return "\n".join(":::MLLOG " + json.dumps({"key": k, "value": v, "time_ms": 1.0, "namespace": "mlperf::logging",
                                               "event_type": "POINT_IN_TIME", "metadata": meta})
                     for k, v in records.items()).encode() + b"\n"


SERVER_LLM_DETAIL = dict(effective_scenario="Server", effective_test_mode="PerformanceOnly", result_validity="VALID",
                         requested_use_token_latencies=True, result_completed_samples_per_sec=29.4087,
                         result_completed_tokens_per_second=8840.42, num_errors=0,
                         **{"result_first_token_99.00_percentile_latency_ns": 435976100,
                            "result_time_per_output_token_99.00_percentile_ns": 39507635})
SINGLE_STREAM_DETAIL = dict(effective_scenario="SingleStream", result_validity="VALID", num_errors=0,
                            early_stopping_latency_ss=7627156, early_stopping_latency_ms=7836918,
                            result_qps_without_loadgen_overhead=131.117, effective_samples_per_query=1,
                            **{"result_90.00_percentile_latency_ns": 7626305})


def path(model: str, scenario: str, division: str = "closed") -> str:
    return f"{division}/Org/results/sys1/{model}/{scenario}/performance/run_1/mlperf_log_summary.txt"


def row(model, scenario, summary, detail=None, round_version="v5.1", **kw):
    log = parse_detail(mllog(**detail)) if detail is not None else None
    return result_row(path(model, scenario, kw.pop("division", "closed")), summary.encode(),
                      round_version=round_version, detail=log, **kw)


def test_the_metric_is_the_detail_logs_key_at_its_precision_and_says_so():
    detail = SERVER_LLM_DETAIL | {"result_completed_tokens_per_second": 101611}
    got = row("llama2-70b-99", "Server", SERVER_LLM.replace("8840.42", "101610.58"), detail)
    assert (got["performance_result"], got["performance_units"], got["mlcommons_units"]) == (101611.0, "Tokens/s",
                                                                                              "Tokens/s")
    assert got["performance_log"] == "mlperf_log_detail.txt"
    assert got["performance_source"] == "mlperf_log_detail.txt: result_completed_tokens_per_second"
    assert got["drop_reason"] is None and got["checker_version"] == "v5.1" and not got["checker_version_assumed"]


def test_without_a_detail_log_the_summary_line_of_the_same_value_is_read_and_named():
    got = row("llama2-70b-99", "Server", SERVER_LLM)
    assert (got["performance_result"], got["performance_log"]) == (8840.42, "mlperf_log_summary.txt")
    assert got["performance_source"] == ("mlperf_log_summary.txt (no detail log): 'Completed tokens per second' "
                                         "(result_completed_tokens_per_second)")


def test_a_detail_log_with_an_overlong_line_is_refused_and_the_summary_says_why():
    from pipelines.lib.io.context import amend

    with amend(limits={"max_line_bytes": 200}):
        refused = parse_detail(mllog(**SERVER_LLM_DETAIL))
    assert isinstance(refused, str) and "MLPERF_MAX_LINE_BYTES" in refused
    got = result_row(path("llama2-70b-99", "Server"), SERVER_LLM.encode(), round_version="v5.1", detail=refused)
    assert got["performance_log"] == "mlperf_log_summary.txt" and "MLPERF_MAX_LINE_BYTES" in got["performance_source"]


def test_an_interactive_folder_whose_run_is_server_is_an_interactive_llm_result():
    got = row("llama2-70b-99", "Interactive", SERVER_LLM, SERVER_LLM_DETAIL)
    assert (got["scenario"], got["scenario_logged"], got["inferred"]) == ("Interactive", "Server", False)
    assert (got["performance_result"], got["performance_units"], got["mlcommons_units"]) == (8840.42, "Tokens/s",
                                                                                              "Tokens/s")
    assert got["location"] == "closed/Org/results/sys1/llama2-70b-99/Interactive"
    assert (got["ttft_limit_ms"], got["tpot_limit_ms"], got["ttft_p99_ms"]) == (450.0, 40.0, 435.9761)
    assert got["drop_reason"] is None and got["result_valid"]


def test_an_llm_over_the_checkers_token_latency_limits_is_invalid_with_the_figures():
    # v5.1 holds llama2-70b-99 Interactive to a p99 TTFT under 450 ms; v6.0 checks the Server run's limits (2,000 ms)
    slow = SERVER_LLM_DETAIL | {"result_first_token_99.00_percentile_latency_ns": 1_200_000_000}
    got = row("llama2-70b-99", "Interactive", SERVER_LLM, slow)
    assert got["performance_result"] == 8840.42
    assert "p99 time to first token 1,200.0 ms is not under checker v5.1's limit of 450 ms" in got["drop_reason"]
    assert row("llama2-70b-99", "Interactive", SERVER_LLM, slow, round_version="v6.0")["drop_reason"] is None
    unflagged = SERVER_LLM_DETAIL | {"requested_use_token_latencies": False}
    assert "use_token_latencies" in row("llama2-70b-99", "Server", SERVER_LLM, unflagged)["drop_reason"]


def test_scenario_folders_in_any_case_and_model_folders_the_checker_maps():
    got = row("resnet50", "singlestream", SINGLE_STREAM, SINGLE_STREAM_DETAIL)
    assert (got["model"], got["scenario"], got["model_mapped_by"]) == ("resnet", "SingleStream",
                                                                       "checker v5.1's model_mapping")
    assert (got["performance_result"], got["performance_units"]) == (7627156 / 1e6, "Latency (ms)")
    assert row("llama3_1-8b", "Offline", SINGLE_STREAM)["model"] == "llama3.1-8b"
    guessed = row("efficientnet-lite0", "singlestream", SINGLE_STREAM, division="open")
    assert (guessed["model"], guessed["model_known"]) == ("resnet", True) and "guess" in guessed["model_mapped_by"]
    # the guesses are each release's: v4.0 took a yolo folder for ssd-small, v5.1 guesses nothing for it
    assert row("yolo-v8", "Offline", SINGLE_STREAM, division="open", round_version="v4.0")["model"] == "ssd-small"
    assert row("yolo-v8", "Offline", SINGLE_STREAM, division="open")["model"] == "yolo-v8"


def test_a_multistream_folder_holding_a_singlestream_run_is_inferred_as_the_checker_does():
    got = row("resnet50", "MultiStream", SINGLE_STREAM, SINGLE_STREAM_DETAIL)
    assert got["inferred"] and got["scenario"] == "MultiStream" and got["performance_units"] == "Latency (ms)"
    assert got["performance_result"] == (7836918 * 8) / 1e6  # the checker's own arithmetic, to the last bit
    assert got["drop_reason"] is None
    from_summary = row("resnet50", "MultiStream", SINGLE_STREAM)
    assert from_summary["performance_result"] == got["performance_result"]  # integers in both logs
    no_estimate = row("resnet50", "MultiStream", SINGLE_STREAM, SINGLE_STREAM_DETAIL | {"early_stopping_latency_ms": 0})
    assert "too few queries for an early-stopping estimate" in no_estimate["drop_reason"]


def test_an_offline_folder_holding_a_singlestream_run_is_its_rate_without_loadgens_overhead():
    got = row("resnet50", "offline", SINGLE_STREAM, SINGLE_STREAM_DETAIL, division="open")
    assert (got["performance_result"], got["performance_units"], got["mlcommons_units"], got["inferred"]) == (
        131.117, "Samples/s", "Samples/s", True)
    assert got["drop_reason"] is None
    assert row("resnet50", "offline", SINGLE_STREAM, division="open")["performance_result"] == 131.12  # the summary's


def test_an_offline_folder_holding_a_multistream_run_is_samples_per_query_over_the_mean_query_latency():
    detail = dict(effective_scenario="MultiStream", result_validity="VALID", num_errors=0, effective_samples_per_query=8,
                  result_mean_query_latency_ns=40765937, early_stopping_latency_ms=42019927)
    got = row("retinanet", "Offline", "Scenario : MultiStream\nResult is : VALID\n", detail, division="open")
    assert got["inferred"] and got["performance_result"] == 8 * 1000 / (40765937 / 1e6)


def test_a_folder_holding_a_run_the_checker_cannot_convert_keeps_the_runs_metric_or_is_invalid_by_release():
    # checker v5.1 tables a Server folder's SingleStream run as that run's metric; v6.0 refuses it
    got = row("resnet50", "Server", SINGLE_STREAM, SINGLE_STREAM_DETAIL)
    assert (got["performance_result"], got["inferred"], got["drop_reason"]) == (7627156 / 1e6, False, None)
    assert "tables in the Server folder unconverted" in got["performance_source"]
    assert "infers no Server result from a SingleStream run" in row(
        "resnet50", "Server", SINGLE_STREAM, SINGLE_STREAM_DETAIL, round_version="v6.0")["drop_reason"]
    interactive = row("llama2-70b-99", "Interactive", SINGLE_STREAM, SINGLE_STREAM_DETAIL)
    assert "an Interactive folder must hold a Server run" in interactive["drop_reason"]


def test_an_llm_singlestream_metric_follows_the_rounds_checker():
    # v5.1 reads llama3.1-8b-edge SingleStream's 90th-percentile latency; a release without that fact, the estimate
    got = row("llama3.1-8b-edge", "SingleStream", LLM_SINGLE_STREAM)
    assert got["performance_result"] == pytest.approx(3545.895439)
    assert "result_90.00_percentile_latency_ns" in got["performance_source"]
    older = row("llama3.1-8b-edge", "SingleStream", LLM_SINGLE_STREAM, round_version="v5.0")
    assert older["performance_result"] == 3546.0 and not older["model_known"]
    assert parse_summary(LLM_SINGLE_STREAM)["TTFT Early stopping 90.0th percentile estimate"] == "272739682"


def test_units_are_labelled_as_each_rounds_checker_labels_them():
    offline = SERVER_LLM.replace("Scenario : Server", "Scenario : Offline").replace(
        "Completed tokens per second: 8840.42", "Tokens per second: 9000.5")
    assert row("llama2-70b-99", "Offline", offline, round_version="v4.0")["mlcommons_units"] == "Samples/s"
    assert row("llama2-70b-99", "Offline", offline, round_version="v4.1")["mlcommons_units"] == "Tokens/s"
    whisper = row("whisper", "Offline", offline)  # its tokens per second, which the v5.1 table labels Samples/s
    assert (whisper["performance_units"], whisper["mlcommons_units"]) == ("Tokens/s", "Samples/s")
    v40 = row("llama2-70b-99", "Server", SERVER_LLM, SERVER_LLM_DETAIL, round_version="v4.0")
    assert (v40["performance_result"], v40["performance_units"]) == (29.4087, "Queries/s")  # completed samples


def test_an_older_summary_spelling_still_gives_the_value():
    older = SINGLE_STREAM.replace("90.0th percentile estimate", "90th percentile estimate")
    assert row("resnet50", "SingleStream", older, round_version="v4.1")["performance_result"] == 7.627156


def test_a_result_without_a_value_names_what_is_missing():
    stripped = SERVER_LLM.replace("Completed tokens per second: 8840.42\n", "")
    got = row("llama2-70b-99", "Server", stripped)
    assert got["performance_result"] is None and got["performance_units"] is None
    assert got["performance_null_reason"] == ("no detail log and the summary prints no 'Completed tokens per second' "
                                              "(its result_completed_tokens_per_second), llama2-70b-99's metric of a "
                                              "Server run for checker v5.1")
    detail = {k: v for k, v in SERVER_LLM_DETAIL.items() if k != "result_completed_tokens_per_second"}
    assert "the detail log has no result_completed_tokens_per_second" in row(
        "llama2-70b-99", "Server", SERVER_LLM, detail)["performance_null_reason"]
    assert "no LoadGen scenario" in row("resnet50", "Batch", SINGLE_STREAM)["performance_null_reason"]
    zero = row("resnet50", "SingleStream", SINGLE_STREAM, SINGLE_STREAM_DETAIL | {"early_stopping_latency_ss": 0})
    assert zero["performance_result"] is None and "not a positive number" in zero["performance_null_reason"]


def test_an_invalid_run_and_loadgen_errors_say_why():
    invalid = SERVER_LLM_DETAIL | {"result_validity": "INVALID", "result_perf_constraints_met": False}
    got = row("llama2-70b-99", "Server", SERVER_LLM, invalid)
    assert got["drop_reason"].startswith("LoadGen judged the run INVALID (performance constraints")
    assert got["performance_result"] == 8840.42  # a value all the same: the table's rule, not ours, drops it
    errors = row("llama2-70b-99", "Server", SERVER_LLM, SERVER_LLM_DETAIL | {"num_errors": 3})
    assert "LoadGen logged 3 error(s)" in errors["drop_reason"]


def test_a_model_nobody_has_seen_gets_the_checkers_default_metric_flagged():
    got = row("llama9-1t", "Server", SERVER_LLM, SERVER_LLM_DETAIL, division="open")
    assert (got["model"], got["model_known"], got["performance_units"]) == ("llama9-1t", False, "Queries/s")
    assert got["performance_result"] == 29.4087 and got["tokens_per_second"] == 8840.42
    mapped = row("llama9-1t", "Server", SERVER_LLM, SERVER_LLM_DETAIL, division="open",
                 model_mapping={"llama9-1t": "llama2-70b-99"})
    assert (mapped["model"], mapped["performance_units"], mapped["model_mapped_by"]) == (
        "llama2-70b-99", "Tokens/s", "the submitter's model_mapping.json")


def test_a_round_without_checker_facts_uses_the_nearest_known_and_says_so():
    got = row("llama2-70b-99", "Server", SERVER_LLM, SERVER_LLM_DETAIL, round_version="v9.9")
    assert (got["checker_version"], got["checker_version_assumed"]) == ("v6.0", True)
    assert row("resnet50", "SingleStream", SINGLE_STREAM, round_version="v3.1")["checker_version"] == "v4.0"


def test_only_tables_systems_mappings_summaries_and_run_1_detail_logs_are_read():
    assert accept(tuple(path("resnet50", "Offline").split("/")))
    assert accept(tuple(path("resnet50", "Offline").replace("summary", "detail").split("/")))
    assert not accept(("closed", "Org", "results", "sys1", "resnet50", "Offline", "performance", "ranging",
                       "mlperf_log_detail.txt"))
    assert accept(("closed", "Org", "systems", "sys1.json")) and accept(("open", "Org", "model_mapping.json"))
    assert accept(("summary_results.json",))
    assert not accept(("closed", "Org", "results", "sys1", "resnet50", "Offline", "accuracy", "mlperf_log_summary.txt"))
    assert not accept(("closed", "Org", "code", "resnet50", "run.py"))


def test_an_inference_archive_has_its_own_bounds(tmp_path):
    import io
    import tarfile

    from pipelines.defs.resources import MlperfResultsSource
    from pipelines.lib.io import limits
    from pipelines.lib.io.context import amend
    from pipelines.lib.mlperf.archive import ArchiveError
    from pipelines.lib.mlperf.inference import parse_inference_round
    from pipelines.lib.mlperf.suites import INFERENCE, TRAINING

    archive = tmp_path / "inference_results_v9.9-main.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in ((f"inference_results_v9.9-main/{path('resnet50', 'SingleStream')}", SINGLE_STREAM.encode()),
                           ("inference_results_v9.9-main/closed/Org/big.bin", b"0" * 300_000)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert len(parse_inference_round(archive, "v9.9").runs) == 1
    with amend(limits={"max_inference_archive_total_bytes": 100_000}):
        with pytest.raises(ArchiveError, match="MLPERF_MAX_INFERENCE_ARCHIVE_TOTAL_BYTES"):
            parse_inference_round(archive, "v9.9")
    source = MlperfResultsSource()
    assert source.policy(INFERENCE).max_bytes == limits.limit("max_inference_archive_bytes") > source.policy(
        TRAINING).max_bytes == limits.limit("max_archive_bytes")
