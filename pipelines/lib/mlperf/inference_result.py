"""One MLPerf Inference result: its metric as MLCommons' submission checker computes it, and its row.

The metric is what MLCommons' submission checker of the round reads (`inference_checker.py`, its facts kept as
data): the detail log's `result_*` key of the scenario LoadGen logged (or of the model, where the checker
overwrites it), at the detail log's precision; the summary's line of the same value only where no detail log
exists (`performance_log` says which). The scenario FOLDER names the result: a folder holding another scenario's
run gets what the checker derives (an Offline folder's SingleStream run: its queries per second without LoadGen's
overhead; a MultiStream folder's SingleStream run: the 99th-percentile early-stopping estimate × 8 samples per
query; an Interactive folder's Server run: that run's metric). A result without a value names why, and a number
that is not finite is never a value. The checker's token-latency rules for LLMs and LoadGen's own verdicts make
the result's drop reason. The archive these results come from: `inference.py`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf.inference_checker import Checker, checker_for, loadgen_keys
from pipelines.lib.mlperf.inference_detail import DETAIL_FILE, DetailLog
from pipelines.lib.mlperf.inference_summary import SUMMARY_FILE, read_summary
from schemas.mlperf import MAX_THROUGHPUT

SCENARIOS = {s.lower(): s for s in ("Offline", "Server", "Interactive", "SingleStream", "MultiStream")}
# The checker's constants (every release from v4.0 on): latencies are logged in ns and tabled in ms; a MultiStream
# result inferred from a SingleStream run counts 8 samples a query, whatever the run's own setting says.
NS_PER_MS, MS_PER_S = 1_000_000, 1_000
MULTISTREAM_SAMPLES_PER_QUERY = 8
_INTEGER = re.compile(r"^[+-]?\d{1,18}$")  # an integer LoadGen prints (longer: read as a float, inf past floats)


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
    return result_from_summary(path, summary.fields, summary.sha256, round_version=round_version, detail=detail,
                               detail_file=detail_file, model_mapping=model_mapping, system_type=system_type)


def result_from_summary(path: str, fields: dict[str, str], summary_sha256: str, *, round_version: str,
                        detail: DetailLog | str | None, detail_file: str | None, model_mapping: dict[str, str] | None,
                        system_type: str | None) -> dict[str, Any]:
    """One result from the summary lines `read_summary` kept (`fields`) and the summary's digest, with its detail
    log (read, or why it was not) and the archive's model mapping and system type."""
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
