"""A LoadGen performance summary (`mlperf_log_summary.txt`) of an MLPerf Inference result, read.

`read_summary` streams a summary from the archive (never read whole): its lines are bounded
(MLPERF_MAX_LOADGEN_LINE_BYTES) and parsed in time linear in their length, a file with more `key : value` lines than
any LoadGen summary prints is refused, and only the lines a result reads are kept (`summary_lines_read`:
`SummaryFields`). `parse_summary` reads a summary's text whole, every line. The result built from it:
`inference_result.py`; the detail log beside it: `inference_detail.py`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import IO, Any

from pipelines.lib.io.limits import human
from pipelines.lib.mlperf.archive import LineTooLong, complete_lines
from pipelines.lib.mlperf.inference_checker import loadgen_keys
from pipelines.lib.mlperf.inference_detail import line_limit

SUMMARY_FILE = "mlperf_log_summary.txt"
_SECTIONS = {"Early Stopping Result:": "", "TTFT Early Stopping Result:": "TTFT ", "TPOT Early Stopping Result:": "TPOT "}
# Lines that can matter to the parser: a `key : value` line, a section line (it has a colon too) or a rule line.
_CANDIDATE = re.compile(rb"^(?:[^\n:]*:|=====)[^\n]*", re.M)
# A summary's `key : value`, section and rule lines, at most: real LoadGen summaries have under 100 (v5.1: 73).
MAX_SUMMARY_LINES = 1_000
MAX_SUMMARY_FIELDS = MAX_SUMMARY_LINES  # parse_summary's fields kept, at most


class _SummaryParser:
    """LoadGen summary lines → `key → value` (the first of a repeated key), in time linear in each line (no
    backtracking pattern: a line of spaces once took time quadratic in its length). Bullet lines under an early
    stopping section get the section's prefix: `TTFT Early stopping 90.0th percentile estimate`."""

    def __init__(self, keep: Callable[[str], bool] | None = None):
        self.fields: dict[str, str] = {}
        self.prefix = ""
        self.keep = keep

    def feed(self, line: str) -> None:
        stripped = line.strip()
        if stripped in _SECTIONS:
            self.prefix = _SECTIONS[stripped]
            return
        if line.startswith("====="):
            self.prefix = ""
            return
        head, colon, value = line.partition(":")
        if not colon:
            return
        head = head.lstrip()
        bullet = head.startswith("*")
        key = (head[1:] if bullet else head).strip()
        if not key or not ("A" <= key[0] <= "Z" or "a" <= key[0] <= "z" or "0" <= key[0] <= "9"):
            return
        key = (self.prefix if bullet else "") + key
        if self.keep is None or self.keep(key):
            self.fields.setdefault(key, value.strip())


def _text_lines(text: str) -> list[str]:
    """Lines as the archive reader splits them: universal newlines (\\n, \\r\\n, \\r)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def parse_summary(text: str) -> dict[str, str]:
    """A LoadGen summary as `key → value` (the first of a repeated key, at most MAX_SUMMARY_FIELDS of them). Bullet
    lines under an early stopping section get the section's prefix: `TTFT Early stopping 90.0th percentile
    estimate`."""
    parser = _SummaryParser()
    for line in _text_lines(text):
        parser.feed(line)
        if len(parser.fields) >= MAX_SUMMARY_FIELDS:
            break
    return parser.fields


@cache
def summary_lines_read() -> frozenset[str]:
    """The summary lines a result reads: its verdicts and statistics, and every line printing a metric
    (inference_loadgen_keys.csv)."""
    return frozenset(_SUMMARY_LINES) | {line for key in loadgen_keys().values() for line in key.summary_lines}


_SUMMARY_LINES = ("SUT name", "Scenario", "Mode", "Result is", "Performance constraints satisfied",
                  "Min duration satisfied", "Min queries satisfied", "Early stopping satisfied", "Samples per second",
                  "Completed samples per second", "Tokens per second", "Completed tokens per second", "target_qps",
                  "target_latency (ns)", "ttft_latency (ns)", "tpot_latency (ns)", "50.00 percentile latency (ns)",
                  "90.00 percentile latency (ns)", "99.00 percentile latency (ns)",
                  "99.00 percentile first token latency (ns)", "99.00 percentile time to output token (ns)")


class SummaryFields(dict):
    """The lines of a summary a result reads (summary_lines_read); asking for another raises: it was never kept."""

    def get(self, key: str, default: Any = None) -> Any:
        if key not in summary_lines_read():
            raise KeyError(f"the summary line {key!r} is not among the lines read (summary_lines_read)")
        return super().get(key, default)


@dataclass(frozen=True)
class Summary:
    fields: SummaryFields
    sha256: str  # of the file as published


def read_summary(fh: IO[bytes], tick: Callable[[], None] | None = None) -> Summary | str:
    """A summary streamed from `fh`: the lines a result reads, and the file's digest; or why it is not read (a line
    over the line limit, more lines than any LoadGen summary prints)."""
    max_line, setting = line_limit()
    digest = hashlib.sha256()
    parser = _SummaryParser(keep=summary_lines_read().__contains__)
    seen = 0
    try:
        for region in complete_lines(fh, max_line, digest, tick):
            if b":" not in region and b"=====" not in region:  # blank or prose lines only: nothing to parse
                continue
            for match in _CANDIDATE.finditer(region):
                seen += 1
                if seen > MAX_SUMMARY_LINES:
                    return (f"more than {MAX_SUMMARY_LINES:,} 'key : value' lines (LoadGen prints under 100): not a "
                            "LoadGen summary; not read")
                parser.feed(match.group().decode("utf-8", errors="replace"))
    except LineTooLong:
        return f"a line longer than the {human(max_line)} line limit ({setting}): the summary is not read"
    return Summary(SummaryFields(parser.fields), digest.hexdigest())
