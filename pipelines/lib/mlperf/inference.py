"""One MLPerf Inference round's archive → results and systems, plus quarantine.

Layout (`mlcommons/inference_results_vX.Y`): `<division>/<org>/results/<system>/<model>/<scenario>/
performance/run_1/` holds LoadGen's summary (`mlperf_log_summary.txt`) and detail log (`mlperf_log_detail.txt`) of
the performance run; `<division>/<org>/systems/<system>.json` the system; an open division's
`<division>/<org>/model_mapping.json` maps its model folders to the benchmark they run. One result per (division,
submitter, system, model, scenario folder), with its metric as MLCommons' results table states it.

The metric is what MLCommons' submission checker of the round reads (`inference_checker.py`, its facts kept as
data): the detail log's `result_*` key of the scenario LoadGen logged (or of the model, where the checker
overwrites it), at the detail log's precision; the summary's line of the same value only where no detail log
exists (`performance_log` says which). The scenario FOLDER names the result: a folder holding another scenario's
run gets what the checker derives (an Offline folder's SingleStream run: its queries per second without LoadGen's
overhead; a MultiStream folder's SingleStream run: the 99th-percentile early-stopping estimate × 8 samples per
query; an Interactive folder's Server run: that run's metric). A result without a value names why.

When the archive ships MLCommons' own results table (`summary_results.json` at its root, as v5.1 does), each result
carries the table's figure beside ours and, for power results, the audited average power it publishes: the
summaries hold no power, and the power logs are not read.

Read as hostile input: summaries and detail logs are streamed (never read whole), their lines bounded
(MLPERF_MAX_LOADGEN_LINE_BYTES) and parsed in time linear in their length, and only the lines a result reads are
kept; reading the archive ends at MLPERF_SCORING_DEADLINE_SECONDS. Two folders spelling one result (`Offline` and
`offline`) publish at most one of them, and a number that is not finite is never a value.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from io import BytesIO
from typing import IO, Any

from pipelines.lib.io import limits
from pipelines.lib.io.jsonsafe import loads_bounded
from pipelines.lib.io.limits import human
from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf.archive import LineTooLong, complete_lines, iter_members
from pipelines.lib.mlperf.inference_checker import Checker, checker_for, loadgen_keys
from pipelines.lib.mlperf.inference_detail import DETAIL_FILE, DetailLog, line_limit, read_detail
from pipelines.lib.mlperf.rejections import NoResultLogs, RoundRejected, ScoringDeadline
from pipelines.lib.mlperf.round_parser import RoundTables, add_system, quarantine
from pipelines.lib.mlperf.suites import INFERENCE
from schemas.mlperf import MAX_THROUGHPUT

SUMMARY_FILE = "mlperf_log_summary.txt"
TABLE_FILE = "summary_results.json"  # MLCommons' results table, at the archive's root when the round ships it
MODEL_MAPPING_FILE = "model_mapping.json"  # an open division submitter's model folder → benchmark
SCENARIOS = {s.lower(): s for s in ("Offline", "Server", "Interactive", "SingleStream", "MultiStream")}
# The checker's constants (every release from v4.0 on): latencies are logged in ns and tabled in ms; a MultiStream
# result inferred from a SingleStream run counts 8 samples a query, whatever the run's own setting says.
NS_PER_MS, MS_PER_S = 1_000_000, 1_000
MULTISTREAM_SAMPLES_PER_QUERY = 8
_SECTIONS = {"Early Stopping Result:": "", "TTFT Early Stopping Result:": "TTFT ", "TPOT Early Stopping Result:": "TPOT "}
_INTEGER = re.compile(r"^[+-]?\d{1,18}$")  # an integer LoadGen prints (longer: read as a float, inf past floats)
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


def _summary_number(text: str | None) -> int | float | None:
    """A summary value as LoadGen printed it: an integer stays one (the checker's arithmetic on detail-log
    integers is then reproduced exactly). NaN and ±inf are returned as such, for the value check to name them."""
    if text is None:
        return None
    text = text.strip()
    return int(text) if _INTEGER.match(text) else number_or_none(text)


def _logged_number(value: Any) -> int | float | None:
    """A detail-log value as a number (None: not one). An integer past 64 bits is no count LoadGen logs: read as a
    float (±inf past floats), so arithmetic never overflows and the value check names it."""
    if type(value) is int and not -(1 << 63) <= value < 1 << 63:
        return number_or_none(value)
    return value if type(value) in (int, float) else None


@dataclass
class _Values:
    """Where a result's values are read: its detail log, as the checker reads it, or without one its summary's
    line of the same value (inference_loadgen_keys.csv)."""

    detail: DetailLog | None
    summary: dict[str, str]
    without_detail: str  # why the summary is read (no detail log, or why it was refused)
    read: list[str] = field(default_factory=list)  # the keys or lines the metric was read from

    def number(self, key: str) -> int | float | None:
        if self.detail is not None:
            value = _logged_number(self.detail.get(key))
            if value is not None:
                self.read.append(key)
            return value
        for line in loadgen_keys()[key].summary_lines:
            value = _summary_number(self.summary.get(line))
            if value is not None:
                self.read.append(f"{line!r} ({key})")
                return value
        return None

    def missing(self, key: str) -> str:
        """The sentence saying a key's value is not in the log read."""
        if self.detail is not None:
            found = self.detail.get(key)
            return f"the detail log has no {key}" if found is None else \
                f"the detail log's {key} is {str(found)[:40]!r}, not a number"
        lines = " or ".join(repr(line) for line in loadgen_keys()[key].summary_lines)
        return f"{self.without_detail} and the summary prints no {lines} (its {key})"

    @property
    def log(self) -> str:
        return DETAIL_FILE if self.detail is not None else SUMMARY_FILE


@dataclass
class _Metric:
    value: float | None = None
    units: str | None = None
    source: str | None = None
    inferred: bool = False
    null_reason: str | None = None
    invalid: list[str] = field(default_factory=list)


def _throughput_units(key: str) -> str | None:
    return loadgen_keys()[key].performance_units


def metric(checker: Checker, model: str, scenario: str, logged: str | None, values: _Values,
           system_type: str | None = None) -> _Metric:
    """The metric of a result whose folder says `scenario` and whose run LoadGen logged as `logged`, as the
    checker's get_performance_metric and get_inferred_result compute it."""
    out = _Metric()
    v = f"checker {checker.version}"
    how = None  # how the value is derived from what was read, when it is not read as it is
    if logged is None:
        out.null_reason = "the logs state no scenario LoadGen ran (effective_scenario, 'Scenario')"
        return out
    key, own = checker.metric_key(model, logged)
    if key is None:
        out.null_reason = f"{v} reads no metric from a run LoadGen logged as {logged!r}"
        return out
    derived = scenario != logged and not (scenario == "Interactive" and logged == "Server")
    if derived and scenario == "Offline" and logged == "SingleStream":
        qps = values.number("result_qps_without_loadgen_overhead")
        if qps is None:
            out.null_reason = values.missing("result_qps_without_loadgen_overhead") + (
                f": {v} tables an Offline folder's SingleStream run at that rate")
            return out
        out.value, out.units, out.inferred = float(qps), "Samples/s", True
        how = "the SingleStream run's queries per second without LoadGen's overhead (Offline inferred)"
    elif derived and scenario == "Offline" and logged == "MultiStream":
        per_query, mean = values.number("effective_samples_per_query"), values.number("result_mean_query_latency_ns")
        if per_query is None or mean is None or mean == 0:
            missing = "effective_samples_per_query" if per_query is None else "result_mean_query_latency_ns"
            out.null_reason = (values.missing(missing) if per_query is None or mean is None else
                               "the MultiStream run's mean query latency is 0") + (
                f": {v} infers an Offline folder's MultiStream run from samples per query ÷ its mean query latency")
            return out
        out.value, out.units, out.inferred = per_query * MS_PER_S / (mean / NS_PER_MS), "Samples/s", True
        how = "the MultiStream run's samples per query × 1,000 ÷ its mean query latency in ms (Offline inferred)"
    elif derived and scenario == "MultiStream" and logged == "SingleStream":
        estimate = values.number("early_stopping_latency_ms")
        if estimate is None:
            out.null_reason = values.missing("early_stopping_latency_ms") + (
                f": {v} infers a MultiStream folder's SingleStream run from its 99th-percentile early-stopping estimate")
            return out
        out.value = (estimate * MULTISTREAM_SAMPLES_PER_QUERY) / NS_PER_MS
        out.units, out.inferred = "Latency (ms)", True
        how = (f"the SingleStream run's 99th-percentile early-stopping estimate × {MULTISTREAM_SAMPLES_PER_QUERY} "
               "samples per query (MultiStream inferred)")
        if estimate == 0:
            out.invalid.append("the SingleStream run processed too few queries for an early-stopping estimate, "
                               f"from which {v} infers the MultiStream latency")
    else:
        raw = values.number(key)
        if raw is None:
            whose = f"{model}'s" if own else "the"
            out.null_reason = values.missing(key) + f", {whose} metric of a {logged} run for {v}"
            return out
        value = float(raw)
        if logged in ("SingleStream", "MultiStream"):  # the checker divides whatever the key, by the logged scenario
            value /= NS_PER_MS
            if checker.latency_in_seconds(model, logged):
                value /= MS_PER_S
        out.value = value
        units = _throughput_units(key)
        seconds = units is not None and units.startswith("Latency") and checker.latency_in_seconds(model, logged)
        out.units = "Latency (s)" if seconds else units
        if derived:
            if scenario == "Interactive":
                out.invalid.append(f"an Interactive folder must hold a Server run; LoadGen ran {logged}")
            elif checker.uninferable_invalid:
                out.invalid.append(f"{v} infers no {scenario} result from a {logged} run")
            how = f"the {logged} run's own metric, which {v} tables in the {scenario} folder unconverted"
    if out.inferred and checker.inferred_edge_only and "edge" not in (system_type or "").lower():
        out.invalid.append(f"{v} counts a result inferred from another scenario's run only on an edge system "
                           f"(system_type {system_type!r})")
    where = values.log if values.detail is not None else f"{values.log} ({values.without_detail})"
    out.source = f"{where}: {', '.join(dict.fromkeys(values.read))}" + (f" — {how}" if how else "")
    return out


def _ns_ms(value: int | float | None) -> float | None:
    return value / NS_PER_MS if value is not None else None


def _llm_checks(checker: Checker, model: str, scenario: str, logged: str | None, values: _Values) -> list[str]:
    """The checker's token-latency rules for LLMs: the run logged token latencies, and its p99 time to first token
    and time per output token are under the round's limits for the model and scenario."""
    v = f"checker {checker.version}"
    if not checker.token_latency_model(model):
        return []
    if values.detail is not None and values.detail.get("requested_use_token_latencies") is False:
        return [f"the run did not log token latencies (use_token_latencies), which {v} requires of {model}"]
    limits = checker.token_limits(model, scenario, logged or scenario)
    if limits is None:
        return []
    found = []
    for key, limit_ms, what in (("result_first_token_99.00_percentile_latency_ns", limits[0], "time to first token"),
                                ("result_time_per_output_token_99.00_percentile_ns", limits[1],
                                 "time per output token")):
        ns = _peek(values, key)
        if ns is None:
            found.append(f"{values.missing(key)}: {v} holds {model} {scenario} to a p99 {what} under {limit_ms:g} ms")
        elif not ns < limit_ms * NS_PER_MS:
            found.append(f"p99 {what} {ns / NS_PER_MS:,.1f} ms is not under {v}'s limit of {limit_ms:g} ms "
                         f"for {model} {scenario}")
    return found


def _peek(values: _Values, key: str) -> int | float | None:
    """A value read without recording it as the metric's source."""
    before = len(values.read)
    value = values.number(key)
    del values.read[before:]
    return value


def accept(parts: tuple[str, ...]) -> bool:
    """What the warehouse reads of an Inference archive: MLCommons' table, systems files, open-division model
    mappings and the performance runs' summaries and detail logs."""
    if parts == (TABLE_FILE,):
        return True
    if len(parts) == 3 and parts[2] == MODEL_MAPPING_FILE:
        return True
    if len(parts) == 4 and parts[2] == "systems":
        return parts[3].endswith(".json")
    if len(parts) >= 8 and parts[2] == "results" and parts[6] == "performance":
        return parts[-1] == SUMMARY_FILE or (parts[-1] == DETAIL_FILE and len(parts) == 9 and parts[7] == "run_1")
    return False


class ReadingDeadline(ScoringDeadline):
    """Reading an Inference round's archive took longer than MLPERF_SCORING_DEADLINE_SECONDS (no worker processes:
    its results are read in the refresh's own process)."""

    def __init__(self, round_version: str, seconds: float):
        RoundRejected.__init__(self, f"{round_version}: reading its archive did not finish within {seconds:,g} s "
                               "(MLPERF_SCORING_DEADLINE_SECONDS); the round keeps its previous data")


def _deadline(round_version: str) -> Callable[[], None]:
    """A check that raises ReadingDeadline once the round's deadline has passed (called for every member and read)."""
    seconds = limits.limit("scoring_deadline_seconds")
    ends = time.monotonic() + seconds

    def tick() -> None:
        if time.monotonic() > ends:
            raise ReadingDeadline(round_version, seconds)
    return tick


def parse_inference_round(archive, round_version: str) -> RoundTables:
    """Results (in `runs`), systems and quarantine of one Inference round."""
    tables = RoundTables()
    source = INFERENCE.quarantine_source
    power_runs: set[str] = set()  # locations with a ranging run: power submissions
    table: dict[str, dict] | None = None  # MLCommons' table by Location, when the archive ships it
    summaries: dict[str, tuple[str, Summary]] = {}  # location → its summary: path, the lines read and digest
    details: dict[str, tuple[str, DetailLog | str]] = {}  # location → its detail log, read (or why not)
    refused: dict[str, str] = {}  # location → why its summary was not read
    mappings: dict[tuple[str, str], dict[str, str]] = {}  # (division, submitter) → model folder → benchmark
    tick = _deadline(round_version)

    def read(fh: IO[bytes], path: str) -> Summary | DetailLog | str:
        return (read_detail if path.endswith(DETAIL_FILE) else read_summary)(fh, tick)

    for member in iter_members(archive, accept=accept, read_text=read, total_limit=INFERENCE.archive_total_limit,
                               tick=tick):
        parts = member.path.split("/")
        if member.refused:
            quarantine(tables, round_version, member.path, member.refused, source=source)
            if parts[-1] == SUMMARY_FILE:
                refused.setdefault("/".join(parts[:6]), member.refused)
            continue
        if parts == [TABLE_FILE]:
            table = _mlcommons_table(tables, round_version, member)
        elif parts[-1] == MODEL_MAPPING_FILE:
            mapping = _model_mapping(tables, round_version, member)
            if mapping is not None:
                mappings[(parts[0], parts[1])] = mapping
        elif parts[2] == "systems":
            before = len(tables.systems)
            add_system(tables, round_version, member.path, member.data, parts[1], parts[3][: -len(".json")],
                       source=source)
            if len(tables.systems) > before:
                tables.systems[-1]["division_folder"] = parts[0]
        elif parts[-1] == DETAIL_FILE:
            details["/".join(parts[:6])] = (member.path, member.data)
        elif len(parts) != 9 or parts[7] != "run_1":
            why = ("the ranging run of a power submission (it sets the power meter's range; the result is run_1)"
                   if parts[7:8] == ["ranging"] else "a performance summary outside performance/run_1")
            quarantine(tables, round_version, member.path, f"{why}: MLCommons' table does not read it", source=source)
            if parts[7:8] == ["ranging"]:
                power_runs.add("/".join(parts[:6]))
        elif isinstance(member.data, str):  # not read: a line over the limit, or no LoadGen summary
            quarantine(tables, round_version, member.path, member.data, source=source)
            refused["/".join(parts[:6])] = member.data
        else:
            summaries["/".join(parts[:6])] = (member.path, member.data)
    system_types = {(s["division_folder"], s["submitter"], s["system"]): s.get("system_type") for s in tables.systems}
    for location, (path, summary) in summaries.items():
        tick()
        detail_path, detail = details.pop(location, (None, None))
        division, submitter, _results, system = location.split("/")[:4]
        if isinstance(detail, str):
            quarantine(tables, round_version, detail_path, f"detail log not read: {detail}", source=source)
        row = _result(path, summary.fields, summary.sha256, round_version=round_version, detail=detail,
                      detail_file=detail_path, model_mapping=mappings.get((division, submitter)),
                      system_type=system_types.get((division, submitter, system)))
        tables.runs.append(row)
        if row["drop_reason"]:
            quarantine(tables, round_version, path, row["drop_reason"], source=source)
    for location, (detail_path, _) in details.items():
        why = (f"its summary was not read ({refused[location]})" if location in refused
               else "a detail log without the summary beside it")
        quarantine(tables, round_version, detail_path, f"{why}: the checker reads a result only from both",
                   source=source)
    _one_result_per_spelling(tables, round_version, table)
    for row in tables.runs:
        row["power_submission"] = row["location"] in power_runs
        listed = (table or {}).get(row["location"], {})
        has_power = listed.get("has_power") is True
        units, power_units = listed.get("Performance_Units"), listed.get("Power_Units")
        # Not finite (NaN, Infinity, 1e309 in the JSON) stays as read: the model's bounds null it, with the reason.
        row.update(mlcommons_performance_result=number_or_none(listed.get("Performance_Result"), text=False),
                   mlcommons_table_units=units if isinstance(units, str) else None,
                   power_result=number_or_none(listed.get("Power_Result"), text=False) if has_power else None,
                   power_units=power_units if has_power and isinstance(power_units, str) else None)
    if not tables.runs:
        raise NoResultLogs(f"{round_version}: the archive {archive.name} holds no LoadGen summaries "
                           f"(looked for {' and '.join(INFERENCE.result_layouts)}); nothing was loaded")
    return tables


def _one_result_per_spelling(tables: RoundTables, round_version: str, table: dict[str, dict] | None) -> None:
    """One result per division, submitter, system, model and scenario: folders whose paths differ only in case
    (`Offline` and `offline`) spell one result. The one MLCommons' layout names is kept (its table's Location when
    the archive ships the table, else the scenario's own spelling); the others, or all when none or several are
    named, leave the results for the quarantine, with the reason."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in tables.runs:
        groups[row["location"].lower()].append(row)
    dropped: set[int] = set()
    for rows in (rows for rows in groups.values() if len(rows) > 1):
        listed = [r for r in rows if table is not None and r["location"] in table]
        if listed:
            kept, why = (listed[0] if len(listed) == 1 else None), "MLCommons' table lists it"
        else:
            own = [r for r in rows if r["scenario_folder"] == SCENARIOS.get(r["scenario_folder"].lower())]
            kept = own[0] if len(own) == 1 else None
            why = ("its scenario folder is spelled as LoadGen names the scenario" if table is None else
                   "MLCommons' table lists none of them, and its scenario folder is spelled as LoadGen names it")
        locations = ", ".join(sorted(r["location"] for r in rows))
        for row in rows:
            if row is kept:
                continue
            reason = (f"another spelling of the result {kept['location']} (one division, submitter, system, model "
                      f"and scenario): that one is published, as {why}" if kept is not None else
                      f"{len(rows)} folders spell one result (one division, submitter, system, model and scenario: "
                      f"{locations}) and no single one is MLCommons' spelling: none is published")
            quarantine(tables, round_version, row["summary_file"], reason, source=INFERENCE.quarantine_source)
            dropped.add(id(row))
    if dropped:
        tables.runs[:] = [row for row in tables.runs if id(row) not in dropped]


def _mlcommons_table(tables: RoundTables, round_version: str, member) -> dict[str, dict]:
    """MLCommons' results table, by Location (a table that cannot be read is quarantined, nothing else)."""
    try:
        rows = loads_bounded(member.data)
        if not isinstance(rows, list):
            raise ValueError("not a list of results")
        return {r["Location"]: r for r in rows if isinstance(r, dict) and isinstance(r.get("Location"), str)}
    except ValueError as exc:
        quarantine(tables, round_version, member.path, f"MLCommons' results table is unreadable: {exc}",
                   source=INFERENCE.quarantine_source)
        return {}


def _model_mapping(tables: RoundTables, round_version: str, member) -> dict[str, str] | None:
    """A submitter's model_mapping.json (model folder → benchmark); unreadable: quarantined, its folders unmapped."""
    try:
        doc = loads_bounded(member.data)
        if not isinstance(doc, dict):
            raise ValueError("not an object of model folder → benchmark")
        return {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, str)}
    except ValueError as exc:
        quarantine(tables, round_version, member.path, f"model mapping unreadable ({exc}): its model folders stay "
                   "unmapped", source=INFERENCE.quarantine_source)
        return None


def _yes(fields: dict[str, str], key: str) -> bool | None:
    value = fields.get(key)
    return None if value is None else value.strip().lower() == "yes"


def _flag(detail: DetailLog | None, key: str, fields: dict[str, str], line: str) -> bool | None:
    """A LoadGen verdict from the detail log (true/false), else the summary's Yes/No line."""
    if detail is not None and type(detail.get(key)) is bool:
        return detail.get(key)
    return _yes(fields, line)


def _number(detail: DetailLog | None, key: str | None, fields: dict[str, str], line: str) -> float | None:
    """A statistic from the summary (as it prints it), else from the detail log. NaN and ±inf are returned as
    such: the model's bounds null them with the reason (schemas/mlperf.py InferenceResult)."""
    found = number_or_none(fields.get(line))
    if found is None and detail is not None and key is not None:
        found = number_or_none(detail.get(key), text=False)
    return found


def _ms(detail: DetailLog | None, key: str | None, fields: dict[str, str], line: str) -> float | None:
    return _ns_ms(_number(detail, key, fields, line))


def result_row(path: str, data: bytes, *, round_version: str, detail: DetailLog | str | None = None,
               detail_file: str | None = None, model_mapping: dict[str, str] | None = None,
               system_type: str | None = None) -> dict[str, Any]:
    """One result from its performance run's summary and detail log (paths below the archive's top folder); a
    summary that cannot be read raises ValueError saying why."""
    summary = read_summary(BytesIO(data))
    if isinstance(summary, str):
        raise ValueError(summary)
    return _result(path, summary.fields, summary.sha256, round_version=round_version, detail=detail,
                   detail_file=detail_file, model_mapping=model_mapping, system_type=system_type)


def _result(path: str, fields: dict[str, str], summary_sha256: str, *, round_version: str,
            detail: DetailLog | str | None, detail_file: str | None, model_mapping: dict[str, str] | None,
            system_type: str | None) -> dict[str, Any]:
    division, submitter, _results, system, model_folder, scenario_folder = path.split("/")[:6]
    checker = checker_for(round_version)
    log = detail if isinstance(detail, DetailLog) else None
    without = ("no detail log" if detail is None else f"the detail log was not read ({detail})")
    values = _Values(log, fields, without)
    scenario = SCENARIOS.get(scenario_folder.lower())
    model, mapped_by = checker.mlperf_model(model_folder, model_mapping)
    logged = (log.get("effective_scenario") if log is not None and isinstance(log.get("effective_scenario"), str)
              else fields.get("Scenario"))
    validity = log.get("result_validity") if log is not None and isinstance(log.get("result_validity"), str) else \
        fields.get("Result is")
    row = {
        "round": round_version, "division": division, "submitter": submitter, "system": system,
        "model": model, "model_folder": model_folder, "model_known": checker.knows_model(model),
        "model_mapped_by": mapped_by, "counts": "tokens" if _counts_tokens(checker, model) else "samples",
        "scenario": scenario or scenario_folder, "scenario_folder": scenario_folder, "scenario_logged": logged,
        "location": "/".join(path.split("/")[:6]), "summary_file": path, "detail_file": detail_file,
        "checker_version": checker.version, "checker_version_assumed": checker.assumed,
        "sut_name": fields.get("SUT name") or (log.get("sut_name") if log is not None else None),
        "mode": fields.get("Mode"),
        "result_valid": validity.strip().upper() == "VALID" if validity is not None else None,
        "performance_constraints_satisfied": _flag(log, "result_perf_constraints_met", fields,
                                                   "Performance constraints satisfied"),
        "min_duration_satisfied": _flag(log, "result_min_duration_met", fields, "Min duration satisfied"),
        "min_queries_satisfied": _flag(log, "result_min_queries_met", fields, "Min queries satisfied"),
        "early_stopping_satisfied": _flag(log, "early_stopping_met", fields, "Early stopping satisfied"),
        "samples_per_second": _number(log, "result_samples_per_second", fields, "Samples per second")
        or _number(log, "result_completed_samples_per_sec", fields, "Completed samples per second"),
        "tokens_per_second": _number(log, "result_tokens_per_second", fields, "Tokens per second")
        or _number(log, "result_completed_tokens_per_second", fields, "Completed tokens per second"),
        "target_qps": _number(log, None, fields, "target_qps"),
        "target_latency_ms": _ms(log, None, fields, "target_latency (ns)"),
        "ttft_limit_ms": _ms(log, None, fields, "ttft_latency (ns)"),
        "tpot_limit_ms": _ms(log, None, fields, "tpot_latency (ns)"),
        "latency_p50_ms": _ms(log, "result_50.00_percentile_latency_ns", fields, "50.00 percentile latency (ns)"),
        "latency_p90_ms": _ms(log, "result_90.00_percentile_latency_ns", fields, "90.00 percentile latency (ns)"),
        "latency_p99_ms": _ms(log, "result_99.00_percentile_latency_ns", fields, "99.00 percentile latency (ns)"),
        "ttft_p99_ms": _ms(log, "result_first_token_99.00_percentile_latency_ns", fields,
                           "99.00 percentile first token latency (ns)"),
        "tpot_p99_ms": _ms(log, "result_time_per_output_token_99.00_percentile_ns", fields,
                           "99.00 percentile time to output token (ns)"),
        "summary_sha256": summary_sha256,
    }
    problems = []
    if scenario is None:
        result = _Metric(null_reason=f"the scenario folder {scenario_folder!r} is no LoadGen scenario")
    else:
        result = metric(checker, model, scenario, logged, values, system_type)
        if not checker.knows_scenario(scenario):
            problems.append(f"checker {checker.version} knows no {scenario} scenario")
        problems += _llm_checks(checker, model, scenario, logged, values)
    if result.value is not None and not (math.isfinite(result.value) and 0 < result.value <= MAX_THROUGHPUT):
        result.null_reason = (f"the value read is {result.value!r} ({result.source}), not a positive number up to "
                              f"{MAX_THROUGHPUT:g}")
        result.value = None
    if result.null_reason:
        problems.append(f"no value: {result.null_reason}")
    problems += result.invalid
    mode = log.get("effective_test_mode") if log is not None and isinstance(log.get("effective_test_mode"), str) \
        else row["mode"]
    row["mode"] = mode
    if mode is not None and mode != "PerformanceOnly":
        problems.append(f"the log is of a {mode} run, not the performance run")
    if log is not None and log.errors:
        problems.append(f"LoadGen logged {log.errors} error(s) in the detail log; the checker rejects such a run")
    if row["result_valid"] is False:
        problems.append("LoadGen judged the run INVALID (" + ", ".join(
            name for name, met in (("performance constraints", row["performance_constraints_satisfied"]),
                                   ("min duration", row["min_duration_satisfied"]),
                                   ("min queries", row["min_queries_satisfied"]),
                                   ("early stopping", row["early_stopping_satisfied"])) if met is False) + ")")
    elif row["result_valid"] is None:
        problems.append("the logs state no LoadGen verdict (result_validity, 'Result is')")
    row.update(performance_result=result.value, performance_units=result.units if result.value is not None else None,
               mlcommons_units=checker.units_label(model, model_folder, scenario) if scenario else None,
               performance_source=result.source if result.value is not None else None,
               performance_log=values.log if result.value is not None else None, inferred=result.inferred,
               performance_null_reason=result.null_reason, drop_reason="; ".join(problems) or None)
    return row


def _counts_tokens(checker: Checker, model: str) -> bool:
    """Whether the model's throughput counts tokens: one of its metric keys for the checker counts tokens."""
    keys = [key for (m, _), key in checker.facts.get("metric_key", {}).items() if m == model]
    return any(loadgen_keys().get(key) and loadgen_keys()[key].performance_units == "Tokens/s" for key in keys)
