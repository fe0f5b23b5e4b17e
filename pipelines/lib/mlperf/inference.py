"""One MLPerf Inference round's archive → results and systems, plus quarantine.

Layout (`mlcommons/inference_results_vX.Y`): `<division>/<org>/results/<system>/<model>/<scenario>/
performance/run_1/mlperf_log_summary.txt` (LoadGen's summary of the performance run) and
`<division>/<org>/systems/<system>.json`. One result per (division, submitter, system, model,
scenario): its performance metric computed from the summary the way MLCommons' results table states
it, with the units of the table, LoadGen's verdict, which constraints were met and the latency
statistics (TTFT/TPOT for LLMs).

Traps of real archives, handled here: scenario folders in any case (`Offline`, `offline`); an
`Interactive` folder whose summary says `Scenario : Server` (the folder names the result); model
folders that differ from the model (`resnet50` → `resnet`, `llama3_1-8b` → `llama3.1-8b`:
`inference_models.csv`); a MultiStream folder holding a SingleStream summary (the MultiStream latency
is then inferred, as MLCommons does, from the SingleStream 99th percentile × 8 samples per query).

When the archive ships MLCommons' own results table (`summary_results.json` at its root, as v5.1 does), each
result carries the table's figure beside ours (a plausibility test compares them) and, for power results,
the audited average power the table publishes: the summaries hold no power, and the power logs are not read.
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf.archive import iter_members
from pipelines.lib.mlperf.round_parser import NoResultLogs, RoundTables, add_system, quarantine
from pipelines.lib.mlperf.suites import INFERENCE
from pipelines.lib.reference.seeds import INFERENCE_MODELS_CSV

SUMMARY_FILE = "mlperf_log_summary.txt"
TABLE_FILE = "summary_results.json"  # MLCommons' results table, at the archive's root when the round ships it
SCENARIOS = {s.lower(): s for s in ("Offline", "Server", "Interactive", "SingleStream", "MultiStream")}
# LoadGen's MultiStream issues 8 samples per query: a MultiStream latency inferred from SingleStream
# is the SingleStream 99th-percentile estimate × 8 (MLCommons' submission checker).
MULTISTREAM_SAMPLES_PER_QUERY = 8
# MLCommons' units, by scenario and by what the model counts (tokens or samples)
UNITS = {("Offline", "tokens"): "Tokens/s", ("Offline", "samples"): "Samples/s",
         ("Server", "tokens"): "Tokens/s", ("Server", "samples"): "Queries/s",
         ("Interactive", "tokens"): "Tokens/s", ("Interactive", "samples"): "Queries/s",
         ("SingleStream", "tokens"): "Latency (ms)", ("SingleStream", "samples"): "Latency (ms)",
         ("MultiStream", "tokens"): "Latency (ms)", ("MultiStream", "samples"): "Latency (ms)"}
_LINE = re.compile(r"^\s*(?:\*\s*)?([A-Za-z0-9][^:]*?)\s*:\s*(.*?)\s*$")
_SECTION = re.compile(r"^\s*(TTFT |TPOT )?Early Stopping Result:\s*$")


@dataclass(frozen=True)
class ModelInfo:
    model: str
    counts: str  # "tokens" | "samples": what its throughput counts
    task: str
    mlcommons_units: dict[str, str]  # scenario → the units MLCommons' table labels it with, where they differ
    source: str  # where the model's name and unit come from


@lru_cache(maxsize=1)
def _models() -> dict[str, ModelInfo]:
    """Folder name → the model (inference_models.csv: every spelling of a model folder seen)."""
    found = {}
    with open(INFERENCE_MODELS_CSV, newline="") as fh:
        for row in csv.DictReader(fh):
            labels = dict(part.split("=", 1) for part in filter(None, row["mlcommons_units"].split("|")))
            info = ModelInfo(row["model"], row["counts"], row["task"], labels, "inference_models.csv")
            for name in [row["model"], *filter(None, row["folder_aliases"].split("|"))]:
                found[name.strip().lower()] = info
    return found


def model_of(folder: str) -> ModelInfo | None:
    return _models().get(folder.strip().lower())


def parse_summary(text: str) -> dict[str, str]:
    """A LoadGen summary as `key → value` (the first of a repeated key). Bullet lines under an early
    stopping section get the section's prefix: `TTFT Early stopping 90.0th percentile estimate`."""
    fields: dict[str, str] = {}
    prefix = ""
    for line in text.splitlines():
        section = _SECTION.match(line)
        if section:
            prefix = section.group(1) or ""
            continue
        if line.startswith("====="):
            prefix = ""
            continue
        m = _LINE.match(line)
        if m:
            key = (prefix if line.lstrip().startswith("*") else "") + m.group(1)
            fields.setdefault(key, m.group(2))
    return fields


def _number(fields: dict[str, str], key: str) -> float | None:
    return number_or_none(fields.get(key))


def _ms(fields: dict[str, str], key: str) -> float | None:
    ns = _number(fields, key)
    return ns / 1e6 if ns is not None else None


def _yes(fields: dict[str, str], key: str) -> bool | None:
    value = fields.get(key)
    return None if value is None else value.strip().lower() == "yes"


def performance(fields: dict[str, str], scenario: str, counts: str) -> tuple[float | None, str, str | None, bool, str | None]:
    """(value, units, the summary key it comes from, inferred, why there is none) of a result, as
    MLCommons' table states it."""
    logged = fields.get("Scenario", "")
    units = UNITS[(scenario, counts)]
    is_llm = "TTFT Early stopping 90.0th percentile estimate" in fields or "Completed tokens per second" in fields
    if scenario == "MultiStream" and logged == "SingleStream":
        key = "Early stopping 99.0th percentile estimate"
        value = _ms(fields, key)
        return (value * MULTISTREAM_SAMPLES_PER_QUERY if value is not None else None, units,
                f"{key} × {MULTISTREAM_SAMPLES_PER_QUERY} (inferred from SingleStream)", True,
                None if value is not None else f"no {key!r} in the SingleStream summary")
    if scenario == "Offline":
        key = "Tokens per second" if counts == "tokens" else "Samples per second"
        value = _number(fields, key)
    elif scenario in ("Server", "Interactive"):
        key = "Completed tokens per second" if counts == "tokens" else "Completed samples per second"
        value = _number(fields, key)
    elif scenario == "SingleStream":
        key = "90.0th percentile latency (ns)" if is_llm else "Early stopping 90.0th percentile estimate"
        value = _ms(fields, key)
    else:  # MultiStream
        key = "Early stopping 99.0th percentile estimate"
        value = _ms(fields, key)
    return value, units, key, False, None if value is not None else f"the summary has no {key!r}"


def accept(parts: tuple[str, ...]) -> bool:
    """Systems files and the performance run's summaries: all the warehouse reads of an Inference archive."""
    if parts == (TABLE_FILE,):
        return True
    if len(parts) == 4 and parts[2] == "systems":
        return parts[3].endswith(".json")
    return (len(parts) >= 8 and parts[2] == "results" and parts[-1] == SUMMARY_FILE
            and parts[6] == "performance")


def parse_inference_round(archive, round_version: str) -> RoundTables:
    """Results (in `runs`), systems and quarantine of one Inference round."""
    tables = RoundTables()
    source = INFERENCE.quarantine_source
    power_runs: set[str] = set()  # locations with a ranging run: power submissions
    table: dict[str, dict] = {}  # MLCommons' table by Location, when the archive ships it
    for member in iter_members(archive, accept=accept, whole_text=True, total_limit=INFERENCE.archive_total_limit):
        if member.refused:
            quarantine(tables, round_version, member.path, member.refused, source=source)
            continue
        parts = member.path.split("/")
        if parts == [TABLE_FILE]:
            table = _mlcommons_table(tables, round_version, member)
            continue
        if parts[2] == "systems":
            before = len(tables.systems)
            add_system(tables, round_version, member.path, member.data, parts[1], parts[3][: -len(".json")],
                       source=source)
            if len(tables.systems) > before:
                tables.systems[-1]["division_folder"] = parts[0]
            continue
        row = result_row(member.path, member.data)
        row["round"] = round_version
        if len(parts) != 9 or parts[7] != "run_1":
            why = ("the ranging run of a power submission (it sets the power meter's range; the result is run_1)"
                   if parts[7:8] == ["ranging"] else "a performance summary outside performance/run_1")
            quarantine(tables, round_version, member.path, f"{why}: MLCommons' table does not read it", source=source)
            if parts[7:8] == ["ranging"]:
                power_runs.add("/".join(parts[:6]))
            continue
        tables.runs.append(row)
        if row["drop_reason"]:
            quarantine(tables, round_version, member.path, row["drop_reason"], source=source)
    for row in tables.runs:
        row["power_submission"] = row["location"] in power_runs
        listed = table.get(row["location"], {})
        has_power = listed.get("has_power") is True
        units, power_units = listed.get("Performance_Units"), listed.get("Power_Units")
        row.update(mlcommons_performance_result=number_or_none(listed.get("Performance_Result"), text=False),
                   mlcommons_table_units=units if isinstance(units, str) else None,
                   power_result=number_or_none(listed.get("Power_Result"), text=False) if has_power else None,
                   power_units=power_units if has_power and isinstance(power_units, str) else None)
    if not tables.runs:
        raise NoResultLogs(f"{round_version}: the archive {archive.name} holds no LoadGen summaries "
                           f"(looked for {' and '.join(INFERENCE.result_layouts)}); nothing was loaded")
    return tables


def _mlcommons_table(tables: RoundTables, round_version: str, member) -> dict[str, dict]:
    """MLCommons' results table, by Location (a table that cannot be read is quarantined, nothing else)."""
    from pipelines.lib.io.jsonsafe import loads_bounded

    try:
        rows = loads_bounded(member.data)
        if not isinstance(rows, list):
            raise ValueError("not a list of results")
        return {r["Location"]: r for r in rows if isinstance(r, dict) and isinstance(r.get("Location"), str)}
    except ValueError as exc:
        quarantine(tables, round_version, member.path, f"MLCommons' results table is unreadable: {exc}",
                   source=INFERENCE.quarantine_source)
        return {}


def result_row(path: str, data: bytes) -> dict:
    """One result from its performance summary (path below the archive's top folder)."""
    division, submitter, _results, system, model_folder, scenario_folder = path.split("/")[:6]
    text = data.decode("utf-8", errors="replace")
    fields = parse_summary(text)
    scenario = SCENARIOS.get(scenario_folder.lower())
    info = model_of(model_folder)
    counts = info.counts if info else ("tokens" if any("tokens per second" in k.lower() for k in fields) else "samples")
    row = {
        "division": division, "submitter": submitter, "system": system,
        "model": info.model if info else model_folder, "model_folder": model_folder,
        "model_known": info is not None, "counts": counts,
        "scenario": scenario or scenario_folder, "scenario_folder": scenario_folder,
        "scenario_logged": fields.get("Scenario"), "location": "/".join(path.split("/")[:6]), "summary_file": path,
        "sut_name": fields.get("SUT name"), "mode": fields.get("Mode"),
        "result_valid": (fields.get("Result is") or "").strip().upper() == "VALID" if "Result is" in fields else None,
        "performance_constraints_satisfied": _yes(fields, "Performance constraints satisfied"),
        "min_duration_satisfied": _yes(fields, "Min duration satisfied"),
        "min_queries_satisfied": _yes(fields, "Min queries satisfied"),
        "early_stopping_satisfied": _yes(fields, "Early stopping satisfied"),
        "samples_per_second": _number(fields, "Samples per second") or _number(fields, "Completed samples per second"),
        "tokens_per_second": _number(fields, "Tokens per second") or _number(fields, "Completed tokens per second"),
        "target_qps": _number(fields, "target_qps"),
        "target_latency_ms": _ms(fields, "target_latency (ns)"),
        "ttft_limit_ms": _ms(fields, "ttft_latency (ns)"),
        "tpot_limit_ms": _ms(fields, "tpot_latency (ns)"),
        "latency_p50_ms": _ms(fields, "50.00 percentile latency (ns)"),
        "latency_p90_ms": _ms(fields, "90.00 percentile latency (ns)"),
        "latency_p99_ms": _ms(fields, "99.00 percentile latency (ns)"),
        "ttft_p99_ms": _ms(fields, "99.00 percentile first token latency (ns)"),
        "tpot_p99_ms": _ms(fields, "99.00 percentile time to output token (ns)"),
        "summary_sha256": hashlib.sha256(data).hexdigest(),
    }
    problems = []
    if scenario is None:
        problems.append(f"scenario folder {scenario_folder!r} is no LoadGen scenario")
        value, units, key, inferred = None, None, None, False
    else:
        value, units, key, inferred, why = performance(fields, scenario, counts)
        if why:
            problems.append(why)
    if row["mode"] is not None and row["mode"] != "PerformanceOnly":
        problems.append(f"the summary is of a {row['mode']} run, not the performance run")
    if row["result_valid"] is False:
        problems.append("LoadGen judged the run INVALID (" + ", ".join(
            name for name, met in (("performance constraints", row["performance_constraints_satisfied"]),
                                   ("min duration", row["min_duration_satisfied"]),
                                   ("min queries", row["min_queries_satisfied"]),
                                   ("early stopping", row["early_stopping_satisfied"])) if met is False) + ")")
    elif row["result_valid"] is None:
        problems.append("the summary states no LoadGen verdict ('Result is')")
    labels = info.mlcommons_units if info else {}
    row.update(performance_result=value, performance_units=units, performance_source=key, inferred=inferred,
               mlcommons_units=labels.get(row["scenario"], units), drop_reason="; ".join(problems) or None)
    return row
