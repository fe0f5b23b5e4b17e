"""LoadGen's detail log (`performance/run_1/mlperf_log_detail.txt`): its `:::MLLOG` lines as `key → value`,
the way MLCommons' submission checker reads them (its log_parser.MLPerfLog: a line is a record only when it
starts with the marker; the first record of a repeated key counts). Values keep LoadGen's own precision: the
summary prints two decimals, the detail log six significant digits, which MLCommons' table publishes.

Only the keys a result needs are kept (results, settings, early stopping, token latencies, errors); a line
longer than the line limit refuses the log (its result falls back to the summary, saying why).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pipelines.lib.io.limits import human, limit

DETAIL_FILE = "mlperf_log_detail.txt"
MARKER = b":::MLLOG"
# The keys kept: what the metric, the validity and the latency statistics of a result are read from.
_WANTED = re.compile(rb'^:::MLLOG\s*\{\s*"key"\s*:\s*"(result_|effective_|early_stopping_|requested_use_token_latencies|'
                     rb'num_errors"|sut_name"|loadgen_version")', re.M)
_ERROR_FLAG = re.compile(rb'^:::MLLOG.*"is_error"\s*:\s*true', re.M)


@dataclass(frozen=True)
class DetailLog:
    values: dict[str, Any]  # key → value of its first record
    errors: int  # LoadGen's num_errors, else the records flagged is_error
    unreadable: int  # wanted lines that were no JSON record (skipped, as the checker's non-strict reader does)

    def get(self, key: str) -> Any:
        return self.values.get(key)


def parse_detail(data: bytes) -> DetailLog | str:
    """The detail log's records, or why it cannot be read."""
    max_line = limit("max_line_bytes")
    values: dict[str, Any] = {}
    unreadable = 0
    for match in _WANTED.finditer(data):
        end = data.find(b"\n", match.start())
        line = data[match.start(): len(data) if end < 0 else end]
        if len(line) > max_line:
            return (f"a line longer than the {human(max_line)} line limit (MLPERF_MAX_LINE_BYTES): the detail log "
                    "is not read")
        try:
            record = json.loads(line[len(MARKER):])
        except ValueError:
            unreadable += 1
            continue
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            values.setdefault(record["key"], record.get("value"))
    logged = values.get("num_errors")
    errors = logged if type(logged) is int else len(_ERROR_FLAG.findall(data))
    return DetailLog(values, errors, unreadable)
