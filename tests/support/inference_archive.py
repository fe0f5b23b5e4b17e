"""Small MLPerf Inference round archives for tests, written the way LoadGen and MLCommons write theirs: a
performance run's summary and detail log per result, a systems file per system, and optionally MLCommons'
results table (`summary_results.json`) at the root."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from support.logs import make_archive

ROUND = "v5.1"
TOP = f"inference_results_{ROUND}-main"
SYSTEM = "closed/Acme/results/box"  # the results folder of the one system


def offline_summary(samples_per_second: float | str, tokens_per_second: float | str | None = None) -> bytes:
    """An Offline run's summary as LoadGen prints it (an LLM's with its tokens per second)."""
    tokens = "" if tokens_per_second is None else f"Tokens per second: {tokens_per_second}\n"
    return f"""================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : Offline
Mode     : PerformanceOnly
Samples per second: {samples_per_second}
{tokens}Result is : VALID
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: Yes

================================================
Additional Stats
================================================
Min latency (ns)                : 64103447
50.00 percentile latency (ns)   : 344179145045
90.00 percentile latency (ns)   : 620266222656
99.00 percentile latency (ns)   : 682362179705

================================================
Test Parameters Used
================================================
samples_per_query : 4554000
target_qps : 6900
target_latency (ns): 0

No warnings encountered during test.

No errors encountered during test.
""".encode()


def detail_log(**records) -> bytes:
    """A detail log: one `:::MLLOG` record a key, as LoadGen prints them. Values are written as given: a str
    value that is a JSON literal (`NaN`, `1e309`) goes in raw, as a hostile log would write it."""
    meta = json.dumps({"is_error": False, "is_warning": False, "file": "results.cc", "line_no": 1, "pid": 1, "tid": 1})
    lines = []
    for key, value in records.items():
        raw = value[len("raw:"):] if isinstance(value, str) and value.startswith("raw:") else json.dumps(value)
        lines.append(f':::MLLOG {{"key": "{key}", "value": {raw}, "time_ms": 1.0, "namespace": "mlperf::logging", '
                     f'"event_type": "POINT_IN_TIME", "metadata": {meta}}}')
    return ("\n".join(lines) + "\n").encode()


def offline_detail(samples_per_second, tokens_per_second=None) -> bytes:
    tokens = {} if tokens_per_second is None else {"requested_use_token_latencies": True,
                                                   "result_tokens_per_second": tokens_per_second}
    return detail_log(loadgen_version="5.0.25", effective_scenario="Offline", effective_test_mode="PerformanceOnly",
                      result_validity="VALID", result_samples_per_second=samples_per_second,
                      result_min_duration_met=True, result_min_queries_met=True, early_stopping_met=True,
                      num_errors=0, **tokens)


def result_members(model: str, scenario_folder: str, samples_per_second: float, *, system: str = SYSTEM,
                   tokens_per_second: float | None = None, detail: bool = True) -> dict[str, bytes]:
    """The Offline performance run of one result: its summary and (unless `detail` is False) its detail log."""
    run = f"{system}/{model}/{scenario_folder}/performance/run_1"
    members = {f"{run}/mlperf_log_summary.txt": offline_summary(samples_per_second, tokens_per_second)}
    if detail:
        members[f"{run}/mlperf_log_detail.txt"] = offline_detail(samples_per_second, tokens_per_second)
    return members


def system_file(name: str = "box", submitter: str = "Acme", division: str = "closed") -> dict[str, bytes]:
    doc = {"submitter": submitter, "division": division, "status": "available", "system_name": "Acme Box",
           "system_type": "datacenter", "number_of_nodes": "1", "host_processors_per_node": "2",
           "host_processor_model_name": "CPU X", "host_processor_core_count": "32", "accelerators_per_node": "8",
           "accelerator_model_name": "NVIDIA H100-SXM-80GB", "framework": "TensorRT", "hw_notes": "",
           "sw_notes": ""}
    return {f"{division}/{submitter}/systems/{name}.json": json.dumps(doc).encode()}


def table_file(rows: list[dict]) -> dict[str, bytes]:
    """MLCommons' results table; each row needs a Location. A str Performance_Result that is a JSON literal
    (`NaN`, `Infinity`, `1e309`) goes in raw, as a hostile table would write it."""
    items = []
    for row in rows:
        result = row.get("Performance_Result")
        doc = json.dumps({k: v for k, v in row.items() if k != "Performance_Result"})
        if result is not None:
            raw = result if isinstance(result, str) else json.dumps(result)
            doc = doc[:-1] + f', "Performance_Result": {raw}}}'
        items.append(doc)
    return {"summary_results.json": ("[" + ", ".join(items) + "]").encode()}


def good_round(**extra: bytes) -> dict[str, bytes]:
    """A round of three valid Offline results of one system, plus `extra` members."""
    members = system_file()
    for model, sps in (("resnet50", 6607.08), ("retinanet", 120.5), ("bert-99", 3000.25)):
        members |= result_members(model, "Offline", sps)
    return members | extra


def archive_bytes(members: dict[str, bytes], duplicates: dict[str, bytes] | None = None, *, top: str = TOP) -> bytes:
    """The round's archive as GitHub serves it (one top folder); each of `duplicates` is written a second time,
    after every other member, under the same path (a tar may hold a path twice; GitHub's never do)."""
    if not duplicates:
        return make_archive(members, top=top)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for path, data in [*members.items(), *duplicates.items()]:
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class _Repeated(io.RawIOBase):
    """`size` bytes of `pattern` repeated, produced on demand (nothing held)."""

    def __init__(self, pattern: bytes, size: int):
        self.block = pattern * max(1, (1 << 20) // len(pattern))
        self.left = size

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self.left, len(self.block))
        buffer[:n] = self.block[:n]
        self.left -= n
        return n


def repeated(pattern: bytes, size: int) -> io.BufferedReader:
    """A file of `size` bytes of `pattern` repeated, made as it is read: a hostile member of any size costs the
    test no memory."""
    return io.BufferedReader(_Repeated(pattern, size), 1 << 20)


def write_archive(path: Path, members: dict[str, bytes], large: dict[str, tuple[bytes, int]] | None = None,
                  duplicates: dict[str, bytes] | None = None, *, top: str = TOP) -> Path:
    """`path` (.tar.gz, as GitHub serves it): `members`, then each of `large` (path → (pattern, size): the pattern
    repeated to that size, streamed), then `duplicates` written a second time under their paths."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        def add(name: str, size: int, fh) -> None:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = size
            tar.addfile(info, fh)

        for name, data in members.items():
            add(name, len(data), io.BytesIO(data))
        for name, (pattern, size) in (large or {}).items():
            add(name, size, repeated(pattern, size))
        for name, data in (duplicates or {}).items():
            add(name, len(data), io.BytesIO(data))
    return path
