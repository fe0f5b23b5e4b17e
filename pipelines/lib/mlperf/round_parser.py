"""Turn one round's results archive into tables: runs, systems, benchmark folders, quarantine."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import compliance
from .archive import iter_members
from .mllog import MLP05, format_for_round, normalize_v05, parse_log
from .runs import run_facts
from .systems import parse_system


# The timeline of a run kept as events: enough to recompute timings and throughput in SQL.
EVENT_KEYS = frozenset({
    "init_start", "init_stop", "run_start", "run_stop", "block_start", "block_stop",
    "epoch_start", "epoch_stop", "eval_accuracy",
})
EVENT_COLUMNS = ("run_file", "lineno", "time_ms", "key", "value", "epoch_num", "first_epoch_num",
                 "epoch_count", "samples_count", "status")


@dataclass
class RoundTables:
    events: dict[str, list] = field(default_factory=lambda: {c: [] for c in EVENT_COLUMNS})
    runs: list[dict] = field(default_factory=list)
    systems: list[dict] = field(default_factory=list)
    benchmarks: list[dict] = field(default_factory=list)
    quarantine: list[dict] = field(default_factory=list)


def _quarantine(tables: RoundTables, round_version: str, file: str, reason: str, payload: str | None = None):
    tables.quarantine.append({
        "source": "mlperf", "partition": round_version, "file": file, "record": None,
        "reason": reason, "payload": payload,
    })


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def add_events(events: dict[str, list], run_file: str, lines) -> None:
    for line in lines:
        if line.key not in EVENT_KEYS:
            continue
        value = line.value if isinstance(line.value, dict) else {}
        md = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
        events["run_file"].append(run_file)
        events["lineno"].append(line.lineno)
        events["time_ms"].append(line.time_ms)
        events["key"].append(line.key)
        events["value"].append(_number(value.get("value")))
        events["epoch_num"].append(_number(md.get("epoch_num")))
        events["first_epoch_num"].append(_number(md.get("first_epoch_num")))
        events["epoch_count"].append(_number(md.get("epoch_count")))
        events["samples_count"].append(_number(md.get("samples_count")))
        events["status"].append(md.get("status") if isinstance(md.get("status"), str) else None)


def score_run(data: bytes, round_version: str, ruleset: str | None, events: dict[str, list] | None = None,
              run_file: str = "") -> dict:
    """Everything the warehouse keeps about one result file, and whether it counts toward the score."""
    fmt = format_for_round(round_version)
    log = parse_log(data, fmt)
    lines = normalize_v05(log.lines) if fmt is MLP05 else log.lines
    if ruleset is not None:
        verdict = compliance.check_log(lines, len(log.errors), ruleset)
        passed, reason = verdict.passed, verdict.reason
    else:  # no official rules for this generation: the run must start, stop and succeed
        passed, reason = _basic_rules(lines, len(log.errors))
    facts = run_facts(lines)
    if events is not None:
        add_events(events, run_file, lines)
    drop_reason = None
    if not passed:
        drop_reason = f"compliance: {reason}"
    elif facts.run_start_ms is None:
        drop_reason = "run_start not recorded"
    elif facts.run_stop_ms is None:
        drop_reason = "run_stop not recorded"
    minutes = None
    if facts.run_start_ms is not None and facts.run_stop_ms is not None:
        minutes = (facts.run_stop_ms - facts.run_start_ms) / 60.0 / 1000.0
    row = asdict(facts)
    row.update(
        passed_compliance=passed,
        drop_reason=drop_reason,
        time_to_train_minutes=minutes,
        log_lines=log.total_lines,
        mllog_lines=len(log.lines),
        parse_errors=len(log.errors),
        first_parse_error=(log.errors[0][1] + ": " + log.errors[0][0][:300]) if log.errors else None,
    )
    return row


def _basic_rules(lines, parse_errors: int) -> tuple[bool, str | None]:
    if parse_errors:
        return False, "Log lines had parsing errors."
    stops = [l for l in lines if l.key == "run_stop"]
    if not any(l.key == "run_start" for l in lines):
        return False, "Required EXACTLY_ONE occurrence of 'run_start' but found 0"
    if not stops:
        return False, "Required EXACTLY_ONE occurrence of 'run_stop' but found 0"
    if stops[0].value.get("metadata", {}).get("status") != "success":
        return False, "run did not reach its target (run_stop status is not success)"
    return True, None


def parse_round(archive: Path, round_version: str) -> RoundTables:
    ruleset = compliance.ruleset_for_round(round_version) if format_for_round(round_version) is not MLP05 else None
    tables = RoundTables()
    for member in iter_members(archive):
        if member.refused:
            _quarantine(tables, round_version, member.path, member.refused)
            continue
        parts = member.path.split("/")
        submitter = parts[0]
        name = parts[-1]
        if parts[1] == "systems":
            _add_system(tables, round_version, member.path, member.data, submitter, name[: -len(".json")])
            continue
        system = parts[2]
        if name == "entry.json" and len(parts) == 4:
            _add_system(tables, round_version, member.path, member.data, submitter, system)
            continue
        if len(parts) < 5:
            _quarantine(tables, round_version, member.path, "file directly in a system folder, outside any benchmark folder")
            continue
        benchmark = parts[3]
        if name.endswith(".json"):
            if len(parts) == 5:
                _add_benchmark_json(tables, round_version, member, submitter, system, benchmark)
            continue
        if len(parts) != 5:
            _quarantine(tables, round_version, member.path,
                        "result file nested below the benchmark folder: the official scorer does not read it")
            continue
        row = score_run(member.data, round_version, ruleset, tables.events, member.path)
        row.update(round=round_version, submitter=submitter, system=system, benchmark=benchmark,
                   run_file=member.path, ruleset=ruleset)
        tables.runs.append(row)
        if row["mllog_lines"] == 0 and not row["parse_errors"]:
            _quarantine(tables, round_version, member.path, "no MLPerf log lines in this result file; the run is not scored")
        if row["parse_errors"]:
            _quarantine(tables, round_version, member.path,
                        f"{row['parse_errors']} log line(s) could not be parsed; the run is not scored",
                        row["first_parse_error"])
    return tables


def _add_system(tables, round_version, path, data, submitter, system):
    try:
        row = parse_system(data, submitter, system)
    except ValueError as exc:
        _quarantine(tables, round_version, path, str(exc), data[:2000].decode("utf-8", "replace"))
        return
    row.update(round=round_version, source_file=path)
    tables.systems.append(row)


def _add_benchmark_json(tables, round_version, member, submitter, system, benchmark):
    if member.path.rsplit("/", 1)[-1] != "scaling.json":
        return  # other JSON beside the logs (e.g. privateid.json) carries nothing we model
    factor, problem = None, None
    try:
        doc = json.loads(member.data)
        factor = float(doc["scaling_factor"])
    except (ValueError, KeyError, TypeError) as exc:
        problem = f"scaling.json unusable ({type(exc).__name__}: {exc}); the benchmark gets no score"
        _quarantine(tables, round_version, member.path, problem, member.data[:2000].decode("utf-8", "replace"))
    tables.benchmarks.append({
        "round": round_version, "submitter": submitter, "system": system, "benchmark": benchmark,
        "scaling_factor": factor, "scaling_file": member.path, "scaling_problem": problem,
    })
