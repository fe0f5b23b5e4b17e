"""LoadGen's detail log (`performance/run_1/mlperf_log_detail.txt`): its `:::MLLOG` lines as `key → value`,
the way MLCommons' submission checker reads them (its log_parser.MLPerfLog: a line is a record only when it
starts with the marker; the first record of a repeated key counts). Values keep LoadGen's own precision: the
summary prints two decimals, the detail log six significant digits, which MLCommons' table publishes.

Streamed, never read whole, and bounded: only the records of the keys a result reads are parsed and kept
(records_read(): results, settings, early stopping, token latencies, errors; at most MAX_RECORD_LINES lines of
them); a line longer than the LoadGen line limit refuses the log (its result falls back to the summary, saying
why); a record nesting deeper than a scalar's is unreadable, never a RecursionError.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from io import BytesIO
from typing import IO, Any

from pipelines.lib.io.jsonsafe import loads_bounded
from pipelines.lib.io.limits import human, limit
from pipelines.lib.mlperf.archive import LineTooLong, complete_lines
from pipelines.lib.mlperf.inference_checker import loadgen_keys

DETAIL_FILE = "mlperf_log_detail.txt"
MARKER = b":::MLLOG"
# The records a result reads beside the metrics (inference_loadgen_keys.csv): the run's scenario, mode and
# verdicts, the latency statistics the summary may lack, and what LoadGen logged of itself and its errors.
_OTHER_RECORDS = ("effective_scenario", "effective_test_mode", "result_validity", "result_perf_constraints_met",
                  "result_min_duration_met", "result_min_queries_met", "early_stopping_met",
                  "requested_use_token_latencies", "result_50.00_percentile_latency_ns",
                  "result_99.00_percentile_latency_ns", "num_errors", "sut_name", "loadgen_version")
# Lines of those records read from one log, at most: real logs have under 25 (v5.1), one a key.
MAX_RECORD_LINES = 1_000
# Brackets in one such record, at most: the records a result reads hold a scalar (the record and its metadata: 2
# pairs). A line with more is no such record, so it is not parsed (and the JSON depth check, which costs time
# quadratic in a line of escaped quotes, never sees it).
MAX_RECORD_BRACKETS = 8
_ERROR_FLAG = re.compile(rb'"is_error"[ \t]*:[ \t]*true')  # counted once a line, on record lines only


@cache
def records_read() -> frozenset[str]:
    """The detail-log keys a result reads: every metric key of inference_loadgen_keys.csv and the others above."""
    return frozenset(loadgen_keys()) | frozenset(_OTHER_RECORDS)


@cache
def _record_key() -> re.Pattern[bytes]:
    """A record of a key read, found at C speed: a log's other records (most of its lines) make no match at all."""
    keys = b"|".join(re.escape(key.encode()) for key in sorted(records_read(), key=len, reverse=True))
    return re.compile(rb'^:::MLLOG[ \t]*\{[ \t]*"key"[ \t]*:[ \t]*"(' + keys + rb')"', re.M)


def _flagged_lines(region: bytes) -> int:
    """Record lines of `region` flagged `"is_error": true` (each counted once)."""
    count, line_start = 0, -1
    for match in _ERROR_FLAG.finditer(region):
        start = region.rfind(b"\n", 0, match.start()) + 1
        if start != line_start and region.startswith(MARKER, start):
            count, line_start = count + 1, start
    return count


@dataclass(frozen=True)
class DetailLog:
    values: dict[str, Any]  # key → value of its first readable record, for the keys of records_read()
    errors: int  # LoadGen's num_errors, else the records flagged is_error
    unreadable: int  # records of those keys that were no JSON record (skipped, as the checker's non-strict reader does)

    def get(self, key: str) -> Any:
        if key not in records_read():  # never kept: reading it would always say "not logged"
            raise KeyError(f"the detail log's {key!r} is not among the records read (inference_detail.records_read)")
        return self.values.get(key)


def line_limit() -> tuple[int, str]:
    """The line limit of LoadGen's logs and the setting that sets it: the LoadGen one, or the result-log one
    where that is smaller."""
    loadgen, any_log = limit("max_loadgen_line_bytes"), limit("max_line_bytes")
    return (loadgen, "MLPERF_MAX_LOADGEN_LINE_BYTES") if loadgen <= any_log else (any_log, "MLPERF_MAX_LINE_BYTES")


def read_detail(fh: IO[bytes], tick: Callable[[], None] | None = None) -> DetailLog | str:
    """The detail log's records, streamed from `fh`, or why it cannot be read."""
    max_line, setting = line_limit()
    record_key = _record_key()
    values: dict[str, Any] = {}
    unreadable = flagged = lines = 0
    try:
        for region in complete_lines(fh, max_line, tick=tick):
            if b'"is_error"' in region:  # a substring search first: most regions hold no flag at all
                flagged += _flagged_lines(region)
            for match in record_key.finditer(region):
                key = match.group(1).decode()
                lines += 1
                if lines > MAX_RECORD_LINES:
                    return (f"more than {MAX_RECORD_LINES:,} records of the keys a result reads (LoadGen logs each "
                            "once): the detail log is not read")
                if key in values:
                    continue
                end = region.find(b"\n", match.start())
                line = region[match.start() + len(MARKER): len(region) if end < 0 else end]
                if line.count(b"[") + line.count(b"{") > MAX_RECORD_BRACKETS:
                    unreadable += 1
                    continue
                try:
                    record = loads_bounded(line)
                except ValueError:
                    unreadable += 1
                    continue
                if isinstance(record, dict) and record.get("key") == key:
                    values[key] = record.get("value")
    except LineTooLong:
        return f"a line longer than the {human(max_line)} line limit ({setting}): the detail log is not read"
    logged = values.get("num_errors")
    return DetailLog(values, logged if type(logged) is int else flagged, unreadable)


def parse_detail(data: bytes) -> DetailLog | str:
    """The detail log's records, or why it cannot be read (`read_detail` over bytes in memory)."""
    return read_detail(BytesIO(data))
