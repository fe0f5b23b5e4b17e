"""One MLPerf Inference round's archive → results and systems, plus quarantine.

Layout (`mlcommons/inference_results_vX.Y`): `<division>/<org>/results/<system>/<model>/<scenario>/
performance/run_1/` holds LoadGen's summary (`mlperf_log_summary.txt`, `inference_summary.py`) and detail log
(`mlperf_log_detail.txt`, `inference_detail.py`) of the performance run; `<division>/<org>/systems/<system>.json` the
system; an open division's `<division>/<org>/model_mapping.json` maps its model folders to the benchmark they run.
One result per (division, submitter, system, model, scenario folder), with its metric as MLCommons' results table
states it (`inference_result.py`: the metric as the round's submission checker reads it, and the result's row).

When the archive ships MLCommons' own results table (`summary_results.json` at its root, as v5.1 does), each result
carries the table's figure beside ours and, for power results, the audited average power it publishes: the
summaries hold no power, and the power logs are not read.

Read as hostile input: summaries and detail logs are streamed (never read whole), their lines bounded
(MLPERF_MAX_LOADGEN_LINE_BYTES) and parsed in time linear in their length, and only the lines a result reads are
kept; reading the archive ends at MLPERF_SCORING_DEADLINE_SECONDS. Two folders spelling one result (`Offline` and
`offline`) publish at most one of them, and a number that is not finite is never a value.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import IO

from pipelines.lib.io import limits
from pipelines.lib.io.jsonsafe import loads_bounded
from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf.archive import iter_members
from pipelines.lib.mlperf.inference_detail import DETAIL_FILE, DetailLog, read_detail
from pipelines.lib.mlperf.inference_result import SCENARIOS, result_from_summary
from pipelines.lib.mlperf.inference_summary import SUMMARY_FILE, Summary, read_summary
from pipelines.lib.mlperf.rejections import NoResultLogs, RoundRejected, ScoringDeadline
from pipelines.lib.mlperf.round_parser import RoundTables, add_system, quarantine
from pipelines.lib.mlperf.suites import INFERENCE

TABLE_FILE = "summary_results.json"  # MLCommons' results table, at the archive's root when the round ships it
MODEL_MAPPING_FILE = "model_mapping.json"  # an open division submitter's model folder → benchmark


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
        row = result_from_summary(path, summary.fields, summary.sha256, round_version=round_version, detail=detail,
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

