"""Parse MLPerf result logs of every generation into `LogLine`s.

Reproduces `mlperf_logging.compliance_checker.mlp_parser` line for line, because what counts as a
parse error decides whether a run is scored: the file is read as Latin-1 with universal newlines,
only lines holding the generation's token are kept, everything before the *last* token on a line is
cut off (rank and logger prefixes), and the rest is parsed.

Generations:
- `:::MLLOG {json}` (v0.7 and later): JSON with time_ms, key, value, metadata.
- `:::MLL <seconds> key: {json}` (v0.6): timestamps in seconds.
- `:::MLPv0.5.0 <benchmark> <seconds> (<file:line>) key[: value]` (v0.5).
Timestamps are always returned in milliseconds (`time_ms`); `timestamp` keeps the log's own unit,
as the official rule files compare it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from itertools import repeat
from operator import add, itemgetter

import orjson

from pipelines.lib.io.jsonsafe import check_depth
from pipelines.lib.mlperf.rounds import round_sort_key


def timestamp(value) -> float:
    """A log timestamp: a finite number (NaN, ±inf and booleans make the line a parse error)."""
    if isinstance(value, bool):
        raise ValueError(f"timestamp {value!r} is a boolean, not a number")
    ts = float(value)
    if not math.isfinite(ts):
        raise ValueError(f"timestamp {value!r} is not a finite number")
    return ts


def loads(text: str):
    """`json.loads`, fast: orjson first; whatever it refuses (NaN, Infinity, lone surrogates) goes
    to the standard library, so the set of accepted lines is exactly `json.loads`'s. (One
    difference remains: integers beyond 64 bits come back as floats; MLPerf logs have none.)
    A line nested deeper than MLPERF_MAX_JSON_DEPTH is a parse error, not a RecursionError."""
    if text.count("[") + text.count("{") > 32:  # cheap test first: real log lines nest 2-4 deep
        check_depth(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)



@dataclass(slots=True)
class LogLine:
    """Mutable on purpose: some official rule files (stable diffusion) copy and edit lines."""

    full_string: str
    timestamp: float  # in the log's own unit (ms from v0.7, seconds before)
    key: str
    value: object  # {'value': ..., 'metadata': {...}} from v0.7; the parsed JSON before
    lineno: int  # index among token lines, as the official parser numbers them
    time_ms: float


@dataclass(frozen=True)
class LogFormat:
    token: bytes
    seconds: bool  # timestamps in seconds (converted to ms in `time_ms`)

    def parse_line(self, lineno: int, line: str) -> LogLine:
        raise NotImplementedError


class _MllogFormat(LogFormat):
    def parse_line(self, lineno: int, line: str) -> LogLine:
        if not line.startswith(":::MLLOG "):
            raise ValueError("does not match regex")
        m = loads(line[9:])
        ts = timestamp(m["time_ms"])
        m["value"], m["metadata"]  # required, as upstream indexes them
        # Upstream wraps {'value', 'metadata'} in a new dict; the rules read only those two keys
        # (and `'value' in v`), so the parsed object serves as is, one dict less per line.
        return LogLine(line, ts, m["key"], m, lineno, ts)


# The official pattern, verbatim (verbose mode: the spaces outside brackets are not literal).
_MLL_LINE = re.compile(
    r"""^:::MLL [ ] # token and version
([\d\.]+) [ ] # timestamp
([A-Za-z0-9_]+) [ ]? # key
:\s+(.+) # value
$
""",
    re.X,
)


class _MllFormat(LogFormat):
    def parse_line(self, lineno: int, line: str) -> LogLine:
        m = _MLL_LINE.match(line)
        if m is None:
            raise ValueError("does not match regex")
        ts = timestamp(m.group(1))
        return LogLine(line, ts, m.group(2), loads(m.group(3)), lineno, ts * 1000.0)


_MLP05_LINE = re.compile(
    r"^:::MLPv0\.5\.0\s+(\S+)\s+([\d\.]+)\s+\(([^)]*)\)\s+([A-Za-z0-9_]+)\s*(?::\s*(.*))?$"
)


class _Mlp05Format(LogFormat):
    """v0.5 lines carry a bare value (JSON when possible); wrap it like later generations."""

    def parse_line(self, lineno: int, line: str) -> LogLine:
        m = _MLP05_LINE.match(line)
        if m is None:
            raise ValueError("does not match regex")
        ts = timestamp(m.group(2))
        raw = m.group(5)
        try:
            value = loads(raw) if raw is not None else None
        except ValueError:
            value = raw.strip()
        payload = {"value": value, "metadata": {"file": m.group(3), "benchmark": m.group(1)}}
        return LogLine(line, ts, m.group(4), payload, lineno, ts * 1000.0)


MLLOG = _MllogFormat(b":::MLLOG ", seconds=False)
MLL = _MllFormat(b":::MLL", seconds=True)
MLP05 = _Mlp05Format(b":::MLPv0.5.0", seconds=True)


def format_for_round(round_version: str) -> LogFormat:
    """The log generation a round uses: `v0.5` → MLPv0.5.0, `v0.6` → MLL, later → MLLOG."""
    version = round_sort_key(round_version)
    if version <= (0, 5):
        return MLP05
    if version == (0, 6):
        return MLL
    return MLLOG


# Every generation's token starts so (":::MLLOG ", ":::MLL", ":::MLPv0.5.0"): lines without it
# can be dropped while a log is read, before the round's generation is known.
LOG_TOKEN_PREFIX = b":::ML"


class FilteredLog(bytes):
    """A result log reduced to its lines holding `LOG_TOKEN_PREFIX` and the configuration lines
    before `run_start` that may state its precision (newline-separated, universal newlines already
    applied), remembering how many physical lines the file had."""

    physical_lines: int
    sha256: str | None  # of the whole file as published, not of the kept lines

    def __new__(cls, data: bytes, physical_lines: int, sha256: str | None = None):
        self = super().__new__(cls, data)
        self.physical_lines = physical_lines
        self.sha256 = sha256
        return self

    def __reduce__(self):  # keep the line count and digest when sent to a worker process
        return (FilteredLog, (bytes(self), self.physical_lines, self.sha256))


@dataclass
class ParsedLog:
    lines: list[LogLine]
    errors: list[tuple[str, str]]  # (line, error message)
    total_lines: int  # every physical line, token or not


def token_lines(data: bytes, token: bytes) -> tuple[list[str], int]:
    """Lines holding `token`, cut to start at its last occurrence, decoded as Latin-1, stripped."""
    text_token = token.decode("ascii")
    total = getattr(data, "physical_lines", None)
    if b"\r" in data:  # universal newlines, as Python's text mode reads the file
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    # Latin-1 maps byte to character one for one: splitting and searching the decoded text is
    # splitting and searching the bytes, with one decode for the whole log instead of one per line.
    physical = data.decode("latin-1").split("\n")
    if physical and physical[-1] == "":
        physical.pop()
    out = [line[line.rindex(text_token):].strip() for line in physical if text_token in line]
    return out, total if total is not None else len(physical)


def parse_log(data: bytes, fmt: LogFormat) -> ParsedLog:
    lines, total = token_lines(data, fmt.token)
    if fmt is MLLOG:
        parsed = _parse_mllog_lines(lines, _most_brackets_in_a_line(data))
        if parsed is not None:
            return ParsedLog(parsed, [], total)
    parsed: list[LogLine] = []
    errors: list[tuple[str, str]] = []
    for lineno, line in enumerate(lines):
        try:
            parsed.append(fmt.parse_line(lineno, line))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            errors.append((line, str(exc)))
        except (KeyError, TypeError) as exc:  # valid JSON without the fields a log line needs
            errors.append((line, f"missing field {exc}"))
    return ParsedLog(parsed, errors, total)


_NOT_BRACKET_OR_NEWLINE = bytes(c for c in range(256) if c not in b"[{\n")


def _most_brackets_in_a_line(data: bytes) -> int:
    """The most opening brackets on one line of `data`, at C speed: a bound for every token line."""
    return max(map(len, data.translate(None, _NOT_BRACKET_OR_NEWLINE).split(b"\n")), default=0)


def _parse_mllog_lines(lines: list[str], most_brackets: int | None = None) -> list[LogLine] | None:
    """`_MllogFormat.parse_line` over every line at once, for logs where every line parses (nearly
    all): the JSON of all lines in one pass at C speed. None as soon as any line is not the plain
    case (no `:::MLLOG ` start, more than 32 brackets, JSON orjson refuses, a `time_ms` that is not
    a finite int or float, a missing field): the caller then parses line by line, as before, so the
    result is the same either way."""
    start = ":::MLLOG "
    payloads = [line[9:] for line in lines]
    if (most_brackets is None or most_brackets > 32) and max(
            map(add, map(str.count, payloads, repeat("[")), map(str.count, payloads, repeat("{"))), default=0) > 32:
        return None  # a line that `loads` would check for depth
    try:
        objects = list(map(orjson.loads, payloads))
        # every field a line needs (KeyError, TypeError: not the plain case); columns, at C speed
        times, keys, _, _ = zip(*map(_MLLOG_FIELDS, objects), strict=False) if objects else ((), (), (), ())
    except (orjson.JSONDecodeError, KeyError, TypeError, IndexError):
        return None
    if not set(map(type, times)) <= _NUMBER_TYPES or not all(map(str.startswith, lines, repeat(start))):
        return None  # a string, boolean or null time (or a line cut short): line by line
    stamps = list(map(float, times))
    if not all(map(math.isfinite, stamps)):
        return None
    return list(map(LogLine, lines, stamps, keys, objects, range(len(lines)), stamps))


_MLLOG_FIELDS = itemgetter("time_ms", "key", "value", "metadata")
_NUMBER_TYPES = {int, float}  # not bool: `timestamp` refuses it




def normalize_v05(lines: list[LogLine]) -> list[LogLine]:
    """v0.5 ends a run with `run_final`; `run_stop` carries `{"success": bool}`.

    Map them onto the later shape (one `run_stop` with a `status`) so one set of rules applies.
    """
    success = None
    for line in lines:
        if line.key == "run_stop" and isinstance(line.value, dict) and isinstance(line.value.get("value"), dict):
            success = line.value["value"].get("success")
    out = []
    for line in lines:
        if line.key == "run_stop":
            continue
        if line.key == "run_final":
            status = "aborted" if success is False else "success"
            line = replace(line, key="run_stop", value={"value": None, "metadata": {"status": status}})
        out.append(line)
    return out
