"""MLPerf Inference: a LoadGen summary → one result, as MLCommons' table states it; the traps of real archives."""

import pytest

from pipelines.lib.mlperf.inference import accept, model_of, parse_summary, result_row

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
Completed tokens per second : 37.7
"""


def summary_path(model: str, scenario: str) -> str:
    return f"closed/Org/results/sys1/{model}/{scenario}/performance/run_1/mlperf_log_summary.txt"


def test_an_interactive_folder_whose_summary_says_server_is_an_interactive_llm_result():
    row = result_row(summary_path("llama2-70b-99", "Interactive"), SERVER_LLM.encode())
    assert (row["scenario"], row["scenario_logged"]) == ("Interactive", "Server")
    assert (row["performance_result"], row["performance_units"]) == (8840.42, "Tokens/s")
    assert row["location"] == "closed/Org/results/sys1/llama2-70b-99/Interactive"
    assert (row["ttft_limit_ms"], row["tpot_limit_ms"], row["ttft_p99_ms"]) == (450.0, 40.0, 435.9761)
    assert row["drop_reason"] is None and row["result_valid"]


def test_model_folders_and_scenario_case():
    row = result_row(summary_path("resnet50", "singlestream"), SINGLE_STREAM.encode())
    assert (row["model"], row["scenario"]) == ("resnet", "SingleStream")
    assert (row["performance_result"], row["performance_units"]) == (7.627156, "Latency (ms)")
    assert model_of("llama3_1-8b").model == "llama3.1-8b"


def test_a_multistream_latency_is_inferred_from_a_singlestream_summary():
    row = result_row(summary_path("resnet50", "multistream"), SINGLE_STREAM.encode())
    assert row["inferred"] and row["scenario"] == "MultiStream"
    assert row["performance_result"] == pytest.approx(7.836918 * 8)


def test_an_llm_singlestream_latency_is_the_query_latency_not_the_first_token():
    row = result_row(summary_path("llama3.1-8b-edge", "SingleStream"), LLM_SINGLE_STREAM.encode())
    assert row["performance_result"] == pytest.approx(3545.895439)
    fields = parse_summary(LLM_SINGLE_STREAM)
    assert fields["TTFT Early stopping 90.0th percentile estimate"] == "272739682"


def test_an_invalid_run_and_a_missing_metric_say_why():
    invalid = SERVER_LLM.replace("Result is : VALID", "Result is : INVALID").replace(
        "Performance constraints satisfied : Yes", "Performance constraints satisfied : NO")
    row = result_row(summary_path("llama2-70b-99", "Server"), invalid.encode())
    assert row["drop_reason"].startswith("LoadGen judged the run INVALID (performance constraints")
    row = result_row(summary_path("llama2-70b-99", "Offline"), SERVER_LLM.replace("Scenario : Server",
                                                                                  "Scenario : Offline").encode())
    assert row["performance_result"] is None and "'Tokens per second'" in row["drop_reason"]
    row = result_row(summary_path("resnet50", "Batch"), SINGLE_STREAM.encode())
    assert "no LoadGen scenario" in row["drop_reason"]


def test_a_model_nobody_has_seen_counts_what_its_summary_counts():
    row = result_row(summary_path("llama9-1t", "Server"), SERVER_LLM.encode())
    assert (row["model"], row["model_known"], row["counts"], row["performance_units"]) == (
        "llama9-1t", False, "tokens", "Tokens/s")


def test_only_systems_files_and_performance_summaries_are_read():
    assert accept(tuple(summary_path("resnet50", "Offline").split("/")))
    assert accept(("closed", "Org", "systems", "sys1.json"))
    assert not accept(("closed", "Org", "results", "sys1", "resnet50", "Offline", "accuracy", "mlperf_log_summary.txt"))
    assert not accept(("closed", "Org", "code", "resnet50", "run.py"))


def test_an_inference_archive_has_its_own_bounds(tmp_path):
    import io
    import tarfile

    from pipelines.defs.resources import MlperfResultsSource
    from pipelines.lib.io import limits
    from pipelines.lib.mlperf.archive import ArchiveError
    from pipelines.lib.mlperf.inference import parse_inference_round
    from pipelines.lib.mlperf.suites import INFERENCE, TRAINING

    archive = tmp_path / "inference_results_v9.9-main.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in ((f"inference_results_v9.9-main/{summary_path('resnet50', 'SingleStream')}",
                            SINGLE_STREAM.encode()), ("inference_results_v9.9-main/closed/Org/big.bin", b"0" * 300_000)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert len(parse_inference_round(archive, "v9.9").runs) == 1
    saved = limits.current()
    try:
        limits.configure({"max_inference_archive_total_bytes": 100_000})
        with pytest.raises(ArchiveError, match="MLPERF_MAX_INFERENCE_ARCHIVE_TOTAL_BYTES"):
            parse_inference_round(archive, "v9.9")
    finally:
        limits.configure(saved)
    source = MlperfResultsSource()
    assert source.policy(INFERENCE).max_bytes == limits.limit("max_inference_archive_bytes") > source.policy(
        TRAINING).max_bytes == limits.limit("max_archive_bytes")
