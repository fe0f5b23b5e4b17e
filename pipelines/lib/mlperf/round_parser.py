"""Turn one round's results archive into tables: runs, systems, benchmark folders, power logs, RCP verdicts,
quarantine. It only parses: each log is scored by `scorer` in the `scoring_pool`."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.lib.io.jsonsafe import loads_bounded
from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf import power, rcp
from pipelines.lib.mlperf.archive import ROUND_FOLDER, iter_members, result_keys, top_folder
from pipelines.lib.mlperf.mllog import format_for_round
from pipelines.lib.mlperf.rejections import NoResultLogs, RoundMismatch
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.rounds import round_sort_key
from pipelines.lib.mlperf.scorer import EVENT_COLUMNS, LOG_FORMATS, RCP_READING
from pipelines.lib.mlperf.scoring_pool import ResultScorer, small_archive
from pipelines.lib.mlperf.suites import TRAINING, Suite
from pipelines.lib.mlperf.systems import parse_system


@dataclass
class RoundTables:
    events: dict[str, list] = field(default_factory=lambda: {c: [] for c in EVENT_COLUMNS})
    runs: list[dict] = field(default_factory=list)
    systems: list[dict] = field(default_factory=list)
    benchmarks: list[dict] = field(default_factory=list)
    power: list[dict] = field(default_factory=list)
    quarantine: list[dict] = field(default_factory=list)
    rcp: list[dict] = field(default_factory=list)  # the RCP checker's verdict per closed-division result
    # what the RCP checker reads of each scored log, by result: (submitter, system, benchmark) → [(file, reading)]
    rcp_runs: dict[tuple[str, str, str], list] = field(default_factory=dict)
    # a benchmark folder's key → the scaling.json read for it (add_benchmark_json: a second one is quarantined)
    scaling_files: dict[tuple, str] = field(default_factory=dict)


def quarantine(tables: RoundTables, round_version: str, file: str, reason: str, payload: str | None = None,
               source: str = TRAINING.quarantine_source):
    tables.quarantine.append({
        "source": source, "partition": round_version, "file": file, "record": None,
        "reason": reason, "payload": payload,
    })


def quarantine_unscored_run(tables: RoundTables, round_version: str, path: str, row: dict,
                            source: str = TRAINING.quarantine_source) -> None:
    """A result log that is not scored because it cannot be read as one: its quarantine row, with the reason."""
    if row["parse_errors"]:
        quarantine(tables, round_version, path,
                   f"{row['parse_errors']} log line(s) could not be parsed; the run is not scored",
                   row["first_parse_error"], source=source)
    elif row["mllog_lines"] == 0:
        quarantine(tables, round_version, path, "no MLPerf log lines in this result file; the run is not scored",
                   source=source)


def rcp_verdicts(tables: RoundTables, round_version: str, rules: RoundRules) -> None:
    """The RCP checker's verdict on every closed-division result, as the round's release gives it (the
    summarizer checks the closed division only), from the readings of its logs in file-name order."""
    if rules.rcp is None or not tables.rcp_runs:
        return
    division = {(s["submitter"], s["system"]): (s.get("division") or "").lower() for s in tables.systems}
    checker = rules.rcp.tables()
    for (submitter, system, benchmark), readings in sorted(tables.rcp_runs.items()):
        if division.get((submitter, system)) != "closed":
            continue
        verdict = rcp.check_result([r for _, r in sorted(readings, key=lambda fr: fr[0])], checker,
                                   benchmark_folder=benchmark)
        tables.rcp.append({
            "round": round_version, "submitter": submitter, "system": system, "benchmark": benchmark,
            "rcp_check": verdict.label, "rcp_passed": verdict.passed, "rcp_message": verdict.message[:500],
            "rcp_norm_factor": verdict.norm_factor if verdict.record is not None else None,
            "rcp_scaling_written": verdict.scaling_written, "rcp_gbs": _finite(verdict.gbs),
            "rcp_samples_to_converge": _finite(verdict.samples_to_converge),
            "rcp_rules": f"{rules.rcp.usage}_{rules.rcp.ruleset} of {rules.rcp.release}",
        })


def _finite(value) -> float | None:
    number = number_or_none(value, text=False)
    return number if number is not None and math.isfinite(number) else None


def parse_round(archive: Path, round_version: str, rules: RoundRules, workers: int | None = None) -> RoundTables:
    """All tables of one round. Result logs are scored on `workers` processes (default: one per
    core, capped at 4; 1 scores in this process), in archive order."""
    tables = RoundTables()
    with ResultScorer(round_version, rules, workers, small=small_archive(archive)) as scorer:
        for member in iter_members(archive):
            _route(tables, scorer, round_version, member)
        for path, row, events in scorer.results():
            _add_run(tables, round_version, path, row, events)
    check_round_declared(archive, round_version, tables)
    rcp_verdicts(tables, round_version, rules)
    return tables


def _route(tables: RoundTables, scorer: ResultScorer, round_version: str, member) -> None:
    if member.refused:
        quarantine(tables, round_version, member.path, member.refused)
        return
    parts = member.path.split("/")
    name = parts[-1]
    if parts[1] == "systems":
        add_system(tables, round_version, member.path, member.data, parts[0], name[: -len(".json")])
        return
    submitter, system, below = result_keys(parts)  # wanted() admits nothing else
    if below == ["entry.json"]:
        add_system(tables, round_version, member.path, member.data, submitter, system)
    elif len(below) < 2:
        quarantine(tables, round_version, member.path, "file directly in a system folder, outside any benchmark folder")
    elif name.endswith(".json"):
        if len(below) == 2:
            add_benchmark_json(tables, round_version, member, submitter, system, below[0])
    elif power.is_power_file(below):
        _add_power_log(tables, round_version, member, submitter, system, below)
    elif len(below) != 2:
        quarantine(tables, round_version, member.path,
                    "result file nested below the benchmark folder: the official scorer does not read it")
    else:
        scorer.submit(member.path, member.data)


def _add_power_log(tables: RoundTables, round_version: str, member, submitter: str, system: str,
                   below: list[str]) -> None:
    """One node or switch power log, summarized as the round's release reads it (power.py)."""
    benchmark, _, result_name, name = below
    row = power.summarize(member.data, name.split("_", 1)[0], power.semantics_for_round(round_version))
    row.update(round=round_version, submitter=submitter, system=system, benchmark=benchmark,
               result_name=result_name, power_file=member.path,
               power_semantics=power.semantics_for_round(round_version).release)
    tables.power.append(row)
    if row["log_lines"] == 0:
        quarantine(tables, round_version, member.path, "no MLPerf log lines in this power log: it adds no energy")


def _add_run(tables: RoundTables, round_version: str, path: str, row: dict, events: dict[str, list]) -> None:
    submitter, system, (benchmark, _) = result_keys(path.split("/"))
    if (reading := row.pop(RCP_READING, None)) is not None:
        tables.rcp_runs.setdefault((submitter, system, benchmark), []).append((path, reading))
    row.update(round=round_version, submitter=submitter, system=system, benchmark=benchmark, run_file=path)
    tables.runs.append(row)
    for column, values in events.items():
        tables.events[column].extend(values)
    quarantine_unscored_run(tables, round_version, path, row)


def add_system(tables, round_version, path, data, submitter, system, source: str = TRAINING.quarantine_source):
    try:
        row = parse_system(data, submitter, system)
    except ValueError as exc:
        quarantine(tables, round_version, path, str(exc), data[:2000].decode("utf-8", "replace"), source=source)
        return
    row.update(round=round_version, source_file=path)
    tables.systems.append(row)


# The RCP checker writes a factor of at least 1 (a result converging slower than the reference keeps its time;
# `_find_norm_factor` of every release); the shared rounds' 376 factors lie in [1.0003, 1.167]. Above 100 a score
# would be two orders of magnitude off: no sane review writes that. Outside the bounds the folder is unscored
# with the reason, never scored as if it had no scaling.json.
MIN_SCALING_FACTOR, MAX_SCALING_FACTOR = 1.0, 100.0


def add_benchmark_json(tables, round_version, member, submitter, system, benchmark,
                       source: str = TRAINING.quarantine_source, **columns) -> dict | None:
    """A `scaling.json` beside a benchmark's logs, as a row of `tables.benchmarks` (returned), with `columns` (HPC's
    scale) as part of its folder's key. A second one for the same folder is a quarantine row (None returned): the
    scaling table holds one per folder."""
    if member.path.rsplit("/", 1)[-1] != "scaling.json":
        return None  # other JSON beside the logs (e.g. privateid.json) carries nothing we model
    key = (submitter, system, benchmark, *sorted(columns.items()))
    if (first := tables.scaling_files.get(key)) is not None:
        quarantine(tables, round_version, member.path, f"a second scaling.json for the same benchmark folder ({first} "
                   "is read): a folder has one", source=source)
        return None
    tables.scaling_files[key] = member.path
    factor, problem = None, None
    try:
        doc = loads_bounded(member.data)
        factor = number_or_none(doc["scaling_factor"], finite=True)  # never a boolean, NaN or ±inf (1e309)
        if factor is None:
            raise ValueError(f"scaling_factor is {str(doc['scaling_factor'])[:40]!r}, not a finite number")
        if not MIN_SCALING_FACTOR <= factor <= MAX_SCALING_FACTOR:
            raise ValueError(f"scaling_factor {factor!r} is outside [{MIN_SCALING_FACTOR}, {MAX_SCALING_FACTOR}]")
    except (ValueError, KeyError, TypeError) as exc:
        factor, problem = None, f"scaling.json unusable ({type(exc).__name__}: {exc}); the benchmark gets no score"
        quarantine(tables, round_version, member.path, problem, member.data[:2000].decode("utf-8", "replace"),
                   source=source)
    row = {
        "round": round_version, "submitter": submitter, "system": system, "benchmark": benchmark,
        "scaling_factor": factor, "scaling_file": member.path, "scaling_problem": problem, **columns,
    }
    tables.benchmarks.append(row)
    return row


_ROUNDS_OF_FORMAT = {"MLPv0.5.0": "v0.5", "MLL": "v0.6", "MLLOG": "v0.7 or later"}


def check_round_declared(archive: Path, round_version: str, tables: RoundTables, suite: Suite = TRAINING) -> None:
    """Fail a round whose archive holds no result log, or declares another round than the partition:
    the top folder GitHub names `<suite repository>_vX.Y-<ref>` (`training_results_v4.1-main`), the v0.5
    layout's `vX.Y.Z/` folder, and the log format most result logs are written in. Logs that declare nothing are tolerated, and
    so is a minority of older logs (rounds legitimately re-publish earlier rounds' logs)."""
    if not tables.runs:
        raise NoResultLogs(
            f"{round_version}: the archive {archive.name} holds no result logs in any known layout "
            f"(looked for {' and '.join(suite.result_layouts)}); nothing was loaded"
        )
    problems = []
    top = top_folder(archive) or ""
    m = re.match(r"^([a-z]+_results)_(v\d+\.\d+)(?![\d.])", top)
    if m and m.group(1) != suite.repository:
        problems.append(f"its top folder {top!r} is a {m.group(1)} archive, not {suite.repository}")
    elif m and round_sort_key(m.group(2)) != round_sort_key(round_version):
        problems.append(f"its top folder {top!r} is round {m.group(2)}")
    folders = Counter(p for p in (r["run_file"].split("/", 1)[0] for r in tables.runs) if ROUND_FOLDER.match(p))
    for folder in folders:
        if round_sort_key(folder) != round_sort_key(round_version):
            problems.append(f"{folders[folder]} result logs sit in the round folder {folder!r}")
    formats = Counter(r.get("log_format") for r in tables.runs if r.get("log_format"))
    expected = LOG_FORMATS[format_for_round(round_version)]
    if formats:
        fmt, count = formats.most_common(1)[0]
        if fmt != expected and count * 2 > len(tables.runs):
            problems.append(f"{count} of {len(tables.runs)} result logs are written as {fmt} lines "
                            f"(round {_ROUNDS_OF_FORMAT[fmt]}), not {expected} (round {round_version})")
    if problems:
        raise RoundMismatch(
            f"{round_version}: the archive {archive.name} is not round {round_version}: " + "; ".join(problems)
            + ". Check the results URL template; nothing was loaded"
        )
