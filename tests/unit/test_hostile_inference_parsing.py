"""Hostile MLPerf Inference and HPC members, parsed directly: every text parser linear in its input and bounded per
line, summaries and detail logs streamed in bounded memory, the round's deadline honoured, a path the archive holds
twice quarantined, and numbers that are not finite never a value. Every input is generated here.

Times and memory are generous bounds, loose enough for a slow machine, which a parser quadratic in a line's length
or one reading a summary whole would blow by orders of magnitude."""

from __future__ import annotations

import io
import json
import math
import random
import tarfile
import time
import tracemalloc
from pathlib import Path

import pytest

from pipelines.lib.io.context import amend, current
from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf.archive import LineTooLong, complete_lines, iter_members
from pipelines.lib.mlperf.inference import ReadingDeadline, parse_inference_round
from pipelines.lib.mlperf.inference_detail import MAX_RECORD_LINES, parse_detail, read_detail
from pipelines.lib.mlperf.inference_result import result_row
from pipelines.lib.mlperf.inference_summary import MAX_SUMMARY_LINES, parse_summary, read_summary
from pipelines.lib.mlperf.tables import hpc_round_frames, inference_round_frames
from support.inference_archive import (
    SYSTEM,
    TOP,
    archive_bytes,
    detail_log,
    good_round,
    offline_summary,
    repeated,
    result_members,
    table_file,
)

MiB = 1 << 20
SUMMARY = f"{SYSTEM}/resnet50/Offline/performance/run_1/mlperf_log_summary.txt"


def _stream(pattern: bytes, size: int):
    return repeated(pattern, size)


def _timed(fn, *args):
    """What `fn` returns and the wall-clock seconds it took (what a deadline counts)."""
    started = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - started


def _cpu_timed(fn, *args):
    """What `fn` returns and the CPU seconds this process spent in it: the cost of a parse, whatever else the
    machine runs meanwhile (a bound in wall-clock seconds failed on a machine busy with other processes)."""
    started = time.process_time()
    out = fn(*args)
    return out, time.process_time() - started


def _peak_bytes(fn, *args):
    """What `fn` returns and the most memory Python held while it ran."""
    tracemalloc.start()
    try:
        out = fn(*args)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def limits_at():
    """Set limits for one test (the autouse fixture of tests/conftest.py gives each test a run context of its own)."""
    return lambda **values: amend(limits=current().limits | values)


# 1. linear parsers, bounded lines -----------------------------------------------------------------------------------

HOSTILE_LINES = {  # shapes that make a backtracking `key : value` pattern try every split of the line
    "spaces then a letter": "a" + " " * MiB + "x",
    "spaces around a colon": "a" + " " * MiB + ":" + " " * MiB + "x",
    "a bullet of stars": "*" * MiB + ":",
    "spaces only": " " * MiB,
    "a key without a colon": "a" * MiB,
    "colons": ":" * MiB,
    "an early stopping section padded": " " * MiB + "Early Stopping Result:" + " " * MiB + "x",
}


@pytest.mark.parametrize("shape", sorted(HOSTILE_LINES))
def test_a_one_mib_summary_line_parses_in_well_under_a_second(shape):
    text = "Scenario : Offline\n" + HOSTILE_LINES[shape] + "\nResult is : VALID\n"
    fields, seconds = _cpu_timed(parse_summary, text)
    assert seconds < 0.5, f"{shape}: {seconds:.2f} s"  # a quadratic parser is already near this at 16 KB
    assert fields["Scenario"] == "Offline" and fields["Result is"] == "VALID"


def test_summary_parsing_is_linear_in_the_line(limits_at):
    """Streamed too, within a raised line limit: 4 MiB of spaces costs about four times 1 MiB, not sixteen."""
    limits_at(max_loadgen_line_bytes=16 * MiB, max_line_bytes=16 * MiB)
    costs = {}
    for size in (MiB, 4 * MiB):
        data = b"Scenario : Offline\na" + b" " * size + b":" + b" " * size + b"x\n"
        summary, costs[size] = _cpu_timed(read_summary, io.BytesIO(data))
        assert summary.fields.get("Scenario") == "Offline"
    assert costs[4 * MiB] < 1.0 and costs[4 * MiB] < 16 * max(costs[MiB], 0.01), costs


def test_a_summary_line_over_the_loadgen_line_limit_is_not_read_and_says_which_limit():
    data = offline_summary(6607.08).replace(b"SUT name : PySUT", b"SUT name : " + b" " * (200 << 10))
    refused, seconds = _cpu_timed(read_summary, io.BytesIO(data))
    assert refused == "a line longer than the 64 KiB line limit (MLPERF_MAX_LOADGEN_LINE_BYTES): the summary is not read"
    assert seconds < 0.5
    with pytest.raises(ValueError, match="MLPERF_MAX_LOADGEN_LINE_BYTES"):
        result_row(SUMMARY, data, round_version="v5.1")


def test_the_smaller_of_the_two_line_limits_applies_and_is_named(limits_at):
    limits_at(max_line_bytes=100)
    refused = read_summary(io.BytesIO(b"SUT name : " + b"x" * 200 + b"\n"))
    assert "100 bytes line limit (MLPERF_MAX_LINE_BYTES)" in refused


def test_more_lines_than_any_loadgen_summary_prints_are_refused_at_once():
    data, seconds = _cpu_timed(read_summary, _stream(b"a:\n", 512 * MiB))
    assert data == (f"more than {MAX_SUMMARY_LINES:,} 'key : value' lines (LoadGen prints under 100): not a LoadGen "
                    "summary; not read")
    assert seconds < 1  # refused after the first MiB, never reading the rest one line at a time


def test_detail_log_lines_are_bounded_and_a_deep_record_is_unreadable_not_a_crash():
    deep = "raw:" + "[" * 20_000 + "]" * 20_000  # json.loads: RecursionError (within the line limit)
    log = parse_detail(detail_log(effective_scenario="Offline", sut_name=deep, result_validity="VALID"))
    assert log.get("effective_scenario") == "Offline" and log.get("sut_name") is None and log.unreadable == 1
    long = parse_detail(detail_log(effective_scenario="Offline", sut_name="x" * (100 << 10)))
    assert long == ("a line longer than the 64 KiB line limit (MLPERF_MAX_LOADGEN_LINE_BYTES): the detail log is not "
                    "read")


def test_a_record_of_escaped_quotes_behind_many_brackets_is_unreadable_at_once():
    """JSON's depth check costs time quadratic in a line of escaped quotes behind more brackets than its cap; a
    record a result reads holds a scalar, so such a line is not parsed at all."""
    value = "raw:" + "[" * 300 + '"' + '\\"' * 30_000 + '"' + "]" * 300
    data = detail_log(effective_scenario="Offline", sut_name=value) * 500
    log, seconds = _cpu_timed(parse_detail, data)
    assert log.get("effective_scenario") == "Offline" and log.unreadable == 500 and seconds < 1


def test_a_detail_log_repeating_a_record_is_refused_past_the_cap_and_read_fast():
    line = detail_log(result_samples_per_second=1.0)
    (refused, seconds) = _cpu_timed(read_detail, _stream(line, 512 * MiB))
    assert refused.startswith(f"more than {MAX_RECORD_LINES:,} records of the keys a result reads")
    assert seconds < 1
    log = parse_detail(line * 10 + detail_log(result_samples_per_second=2.0))  # the first record counts
    assert log.get("result_samples_per_second") == 1.0


def test_only_the_records_and_lines_a_result_reads_are_kept():
    log = parse_detail(detail_log(effective_scenario="Offline", loadgen_file_sha1={"a": "b"}, result_x=1))
    assert set(log.values) == {"effective_scenario"}
    with pytest.raises(KeyError, match="not among the records read"):
        log.get("result_x")
    summary = read_summary(io.BytesIO(offline_summary(1.5) + b"Some other line : 1\n"))
    assert "Some other line" not in summary.fields and summary.fields.get("Samples per second") == "1.5"
    with pytest.raises(KeyError, match="not among the lines read"):
        summary.fields.get("Some other line")


# 2. streamed, bounded memory -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", [b"\n", b"\r\n", b" " * 1023 + b"\n", b"SUT name is not a key\n"])
def test_a_256_mib_summary_is_streamed_in_bounded_memory(pattern):
    (summary, peak), seconds = _cpu_timed(_peak_bytes, read_summary, _stream(pattern, 256 * MiB))
    assert summary.fields == {} and len(summary.sha256) == 64
    assert peak < 16 * MiB, peak  # read whole, the summary alone would be 256 MiB, its lines many times more
    assert seconds < 15, seconds  # streamed: one pass, never the whole text split into lines


@pytest.mark.slow  # 256 MiB of log lines parsed as records
def test_a_256_mib_detail_log_is_streamed_in_bounded_memory():
    line = b':::MLLOG {"key": "test_datetime", "value": "x", "metadata": {"is_error": false}}\n'  # no key read
    (log, peak), seconds = _cpu_timed(_peak_bytes, read_detail, _stream(line, 256 * MiB))
    assert log.values == {} and log.unreadable == 0
    assert peak < 16 * MiB and seconds < 15, (peak, seconds)


@pytest.mark.parametrize("seed", range(20))
def test_streamed_lines_are_the_lines_of_the_whole_text(seed):
    """Regions cut at any read boundary hold exactly the universal-newline lines, a `\\r\\n` split across two reads
    included."""
    rng = random.Random(seed)
    alphabet = b"ab:\r\n "
    data = rng.randbytes(rng.randrange(1, 3 * MiB)).translate(bytes(alphabet[i % len(alphabet)] for i in range(256)))
    read = b"".join(complete_lines(io.BufferedReader(io.BytesIO(data), 1 << 20), 1 << 30))
    assert read.split(b"\n") == data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")


def test_a_line_over_the_limit_is_found_wherever_it_is():
    for at in (0, 100, (1 << 20) - 3, (1 << 20) + 5, 3 << 20):
        data = b"a\n" * (at // 2) + b"x" * 1001 + b"\n" + b"b\n" * 1000
        with pytest.raises(LineTooLong):
            b"".join(complete_lines(io.BytesIO(data), 1000))
        assert b"".join(complete_lines(io.BytesIO(data), 1001))


# 3. the deadline, the grain, non-finite numbers, duplicate members: the round as a whole -----------------------------

def _archive(tmp_path: Path, members: dict[str, bytes], duplicates: dict[str, bytes] | None = None) -> Path:
    path = tmp_path / f"{TOP}.tar.gz"
    path.write_bytes(archive_bytes(members, duplicates))
    return path


@pytest.mark.slow  # a 768 MiB archive written, then read whole
def test_reading_an_inference_round_ends_at_its_deadline(tmp_path, limits_at):
    path = tmp_path / f"{TOP}.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, data in good_round().items():
            info = tarfile.TarInfo(f"{TOP}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(f"{TOP}/{SYSTEM}/ssd/Offline/performance/run_1/mlperf_log_summary.txt")
        info.size = 768 * MiB
        tar.addfile(info, _stream(b"\n", info.size))
    limits_at(scoring_deadline_seconds=1800, max_member_bytes=1 << 30)
    tables, seconds = _timed(parse_inference_round, path, "v5.1")  # within its deadline: read to the end
    assert len(tables.runs) == 4 and seconds < 60
    deadline = seconds / 4
    limits_at(scoring_deadline_seconds=deadline)
    started = time.perf_counter()
    with pytest.raises(ReadingDeadline) as caught:
        parse_inference_round(path, "v5.1")
    assert time.perf_counter() - started < deadline + 1  # checked at every read of 1 MiB
    assert str(caught.value) == (f"v5.1: reading its archive did not finish within {deadline:,g} s "
                                 "(MLPERF_SCORING_DEADLINE_SECONDS); the round keeps its previous data")


@pytest.mark.slow  # a 1 GiB archive written, then read whole
def test_reading_an_hpc_round_ends_at_its_deadline_not_after_the_archive(tmp_path, limits_at):
    """Scoring checked the deadline only when logs came back: a 1 GiB member of newlines was read to its end first."""
    from pipelines.lib.mlperf.hpc import parse_hpc_round
    from pipelines.lib.mlperf.rejections import ScoringDeadline
    from pipelines.lib.mlperf.round_rules import RoundRules
    from support.logs import open_ssd_run, system_json

    path = tmp_path / "hpc_results_v3.0-main.tar.gz"
    folder = "hpc_results_v3.0-main/Acme/results/box/strong/cosmoflow"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, data in (("hpc_results_v3.0-main/Acme/systems/box.json", system_json()),
                           (f"{folder}/result_0.txt", "\n".join(open_ssd_run(1_000_000, 10)).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(f"{folder}/result_1.txt")
        info.size = 1 << 30
        tar.addfile(info, _stream(b"\n", info.size))
    limits_at(max_member_bytes=2 << 30)
    _, seconds = _timed(parse_hpc_round, path, "v3.0", RoundRules(None, None), 1)
    assert seconds > 2  # reading it takes longer than the deadline below, so the deadline is what stops it
    limits_at(scoring_deadline_seconds=1)
    started = time.perf_counter()
    with pytest.raises(ScoringDeadline, match=r"^v3\.0: parsing and scoring did not finish within 1 s"):
        parse_hpc_round(path, "v3.0", RoundRules(None, None), workers=1)
    assert time.perf_counter() - started < 2


LLM = ("llama2-70b-99", 92.4, 27804.0)  # model, samples/s and tokens/s of its real Offline result
FAKE = (2953.1, 888888.0)


def _with_fake_offline(folder: str = "offline", real: str = "Offline") -> dict[str, bytes]:
    model, samples, tokens = LLM
    return (good_round() | result_members(model, real, samples, tokens_per_second=tokens)
            | result_members(model, folder, FAKE[0], tokens_per_second=FAKE[1]))


def _llm_rows(frames):
    results = frames["inference_results"]
    return sorted(results.filter(results["model"] == LLM[0]).select("location", "performance_result").rows())


def _quarantined(frames, contains: str) -> list[tuple[str, str]]:
    return [(f, r) for f, r in frames["quarantine"].select("file", "reason").rows() if contains in r]


def test_a_lower_case_scenario_folder_beside_the_real_one_is_quarantined_not_published(tmp_path):
    frames = inference_round_frames(_archive(tmp_path, _with_fake_offline()), "v5.1")
    assert _llm_rows(frames) == [(f"{SYSTEM}/{LLM[0]}/Offline", LLM[2])]
    [(file, reason)] = _quarantined(frames, "another spelling")
    assert file == f"{SYSTEM}/{LLM[0]}/offline/performance/run_1/mlperf_log_summary.txt"
    assert reason == (f"another spelling of the result {SYSTEM}/{LLM[0]}/Offline (one division, submitter, system, "
                      "model and scenario): that one is published, as its scenario folder is spelled as LoadGen "
                      "names the scenario")


def test_mlcommons_table_decides_which_spelling_is_the_result(tmp_path):
    """GATEOverflow's folders are lower case in v5.1, and MLCommons' table lists them so: the table's spelling is
    kept, even when the other is LoadGen's."""
    listed = f"{SYSTEM}/{LLM[0]}/offline"
    table = table_file([{"Location": listed, "Performance_Result": FAKE[1], "Performance_Units": "Tokens/s"}])
    members = _with_fake_offline() | table
    frames = inference_round_frames(_archive(tmp_path, members), "v5.1")
    assert _llm_rows(frames) == [(listed, FAKE[1])]
    [(file, reason)] = _quarantined(frames, "another spelling")
    assert file.startswith(f"{SYSTEM}/{LLM[0]}/Offline/") and reason.endswith("as MLCommons' table lists it")


def test_spellings_none_of_which_is_mlcommons_are_all_quarantined(tmp_path):
    frames = inference_round_frames(_archive(tmp_path, _with_fake_offline("offline", "OFFLINE")), "v5.1")
    assert _llm_rows(frames) == []
    reasons = _quarantined(frames, "folders spell one result")
    assert len(reasons) == 2 and all("no single one is MLCommons' spelling: none is published" in r for _, r in reasons)


def test_non_finite_numbers_never_become_values(tmp_path):
    """NaN, ±Infinity and 1e309 from MLCommons' table, the summaries and the detail logs: NULL with the reason, or
    the result without a value and why."""
    rows = [{"Location": f"{SYSTEM}/{m}/Offline", "Performance_Units": "Samples/s", "Performance_Result": v}
            for m, v in (("resnet50", "NaN"), ("retinanet", "Infinity"), ("bert-99", "1e309"))]
    nan_run = f"{SYSTEM}/3d-unet-99/Offline/performance/run_1"
    huge_run = f"{SYSTEM}/dlrm-v2-99/Offline/performance/run_1"
    members = good_round() | table_file(rows) | {
        f"{nan_run}/mlperf_log_summary.txt": offline_summary("nan").replace(b"682362179705", b"inf"),
        f"{nan_run}/mlperf_log_detail.txt": detail_log(effective_scenario="Offline", result_validity="VALID",
                                                       effective_test_mode="PerformanceOnly", num_errors=0,
                                                       result_samples_per_second="raw:NaN"),
        f"{huge_run}/mlperf_log_summary.txt": offline_summary("9" * 5000),  # int(): over Python's digit limit
    }
    frames = inference_round_frames(_archive(tmp_path, members), "v5.1")
    results = {r["model"]: r for r in frames["inference_results"].iter_rows(named=True)}
    for model in ("resnet", "retinanet", "bert-99"):
        assert results[model]["mlcommons_performance_result"] is None
        assert "mlcommons_performance_result failed" in results[model]["values_nulled"]
        assert results[model]["performance_result"] is not None  # the result itself stands
    unet = results["3d-unet-99"]
    assert unet["performance_result"] is None and "the value read is nan" in unet["performance_null_reason"]
    assert unet["samples_per_second"] is None and unet["latency_p99_ms"] is None
    assert "samples_per_second failed" in unet["values_nulled"] and "latency_p99_ms failed" in unet["values_nulled"]
    dlrm = results["dlrm-v2-99"]  # no detail log: the summary's 5,000-digit figure is read as a float, inf
    assert dlrm["performance_result"] is None and "the value read is inf" in dlrm["performance_null_reason"]
    for row in results.values():
        for name, value in row.items():
            assert not (isinstance(value, float) and not math.isfinite(value)), (row["location"], name, value)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e309", "1" + "0" * 400])
def test_a_non_finite_detail_metric_is_no_value_and_says_what_was_read(literal):
    detail = parse_detail(detail_log(effective_scenario="Offline", result_validity="VALID", num_errors=0,
                                     effective_test_mode="PerformanceOnly", result_samples_per_second="raw:" + literal))
    row = result_row(SUMMARY, offline_summary(6607.08), round_version="v5.1", detail=detail)
    assert row["performance_result"] is None and row["drop_reason"].startswith("no value: the value read is ")
    assert "result_samples_per_second" in row["performance_null_reason"]


def test_a_json_integer_past_floats_is_infinite_not_an_overflow():
    assert number_or_none(10**400) == math.inf and number_or_none(-(10**400)) == -math.inf
    assert number_or_none(10**400, finite=True) is None and number_or_none(True) is None


@pytest.mark.parametrize("kind", ["summary", "detail", "system", "table", "model mapping"])
def test_a_path_held_twice_is_read_once_and_the_second_is_a_quarantine_row(tmp_path, kind):
    run = f"{SYSTEM}/resnet50/Offline/performance/run_1"
    path = {"summary": f"{run}/mlperf_log_summary.txt", "detail": f"{run}/mlperf_log_detail.txt",
            "system": "closed/Acme/systems/box.json", "table": "summary_results.json",
            "model mapping": "closed/Acme/model_mapping.json"}[kind]
    members = good_round() | table_file([]) | {"closed/Acme/model_mapping.json": b"{}"}
    second = {path: (members[path].replace(b"6607.08", b"999999") if kind != "system" else
                     json.dumps({"system_name": "Fake", "accelerators_per_node": 1}).encode())}
    frames = inference_round_frames(_archive(tmp_path, members, second), "v5.1")
    results = {r["model"]: r["performance_result"] for r in frames["inference_results"].iter_rows(named=True)}
    assert results == {"resnet": 6607.08, "retinanet": 120.5, "bert-99": 3000.25}  # every result, the first copy
    assert frames["inference_systems"]["system_name"].to_list() == ["Acme Box"]
    [(file, reason)] = _quarantined(frames, "more than once")
    assert file == path and reason == (f"refused archive member '{TOP}/{path}': the archive holds this path more "
                                       "than once; its first copy is read")


def test_every_member_kind_of_an_hpc_round_held_twice_is_quarantined_and_the_round_kept(tmp_path):
    from pipelines.lib.mlperf.round_rules import RoundRules
    from support.logs import make_archive, mllog, open_ssd_run, system_json

    system = "Acme/results/box"
    log = "\n".join(open_ssd_run(1_000_000, 10)).encode()
    members = {"Acme/systems/box.json": system_json(), f"{system}/strong/cosmoflow/result_0.txt": log,
               f"{system}/strong/cosmoflow/scaling.json": b'{"scaling_factor": 1.5}',
               f"{system}/cosmoflow/scaling.json": b'{"scaling_factor": 2.5}',  # v0.7's layout: strong, implied
               f"{system}/weak/cosmoflow/result_0.txt": log.replace(b"init_stop", b"init_stop") + b"\n" +
               mllog("number_of_nodes", 10**400).encode() + b"\n" + mllog("accelerators_per_node", "NaN").encode(),
               f"{system}/weak/cosmoflow/scaling.json": b'{"scaling_factor": NaN}'}
    archive = tmp_path / "hpc_results_v3.0-main.tar.gz"
    base = make_archive(members, top="hpc_results_v3.0-main")
    with tarfile.open(fileobj=io.BytesIO(base)) as src, tarfile.open(archive, "w:gz") as out:
        for info in src:
            out.addfile(info, src.extractfile(info))
        for name in ("Acme/systems/box.json", f"{system}/strong/cosmoflow/result_0.txt",
                     f"{system}/strong/cosmoflow/scaling.json"):
            info = tarfile.TarInfo(f"hpc_results_v3.0-main/{name}")
            info.size = 2
            out.addfile(info, io.BytesIO(b"{}"))
    frames = hpc_round_frames(archive, "v3.0", RoundRules(None, None))
    assert sorted(frames["hpc_runs"]["run_file"].to_list()) == [f"{system}/strong/cosmoflow/result_0.txt",
                                                                f"{system}/weak/cosmoflow/result_0.txt"]
    assert frames["hpc_systems"].height == 1
    scaling = {(r["scale"], r["scaling_factor"], r["scaling_problem"] is not None)
               for r in frames["hpc_scaling"].iter_rows(named=True)}
    assert scaling == {("strong", 1.5, False), ("weak", None, True)}  # NaN: no factor, with the problem
    reasons = dict(frames["quarantine"].select("file", "reason").rows())
    for name in ("Acme/systems/box.json", f"{system}/strong/cosmoflow/result_0.txt",
                 f"{system}/strong/cosmoflow/scaling.json"):
        assert "the archive holds this path more than once" in reasons[name], name
    assert reasons[f"{system}/cosmoflow/scaling.json"] == (
        f"a second scaling.json for the same benchmark folder ({system}/strong/cosmoflow/scaling.json is read): a "
        "folder has one")
    assert "scaling_factor is 'nan', not a finite number" in reasons[f"{system}/weak/cosmoflow/scaling.json"]
    weak = frames["hpc_runs"].filter(frames["hpc_runs"]["scale"] == "weak").row(0, named=True)
    assert weak["number_of_nodes"] is None and "number_of_nodes failed" in weak["values_nulled"]


def test_members_of_every_kind_are_read_in_order_and_a_duplicate_path_is_refused(tmp_path):
    members = good_round()
    path = _archive(tmp_path, members, {SUMMARY: b"x"})
    seen = [(m.path, m.refused is None) for m in iter_members(path, accept=lambda parts: True)]
    assert seen[:-1] == [(p, True) for p in members] and seen[-1] == (SUMMARY, False)
