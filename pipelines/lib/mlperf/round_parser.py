"""Turn one round's results archive into tables: runs, systems, benchmark folders, quarantine."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import compliance
from ..jsonsafe import loads_bounded
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


_NUMERIC = (int, float)


def _number(value):
    return float(value) if type(value) in _NUMERIC else None  # bool is not a number here


def add_events(events: dict[str, list], run_file: str, lines) -> None:
    seen_init_start = False
    for line in lines:
        if line.key not in EVENT_KEYS:
            continue
        if line.key == "init_start":  # every rank logs it; the first one starts the timeline
            if seen_init_start:
                continue
            seen_init_start = True
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


def parse_round(archive: Path, round_version: str, workers: int | None = None) -> RoundTables:
    """All tables of one round. Result logs are scored on `workers` processes (default: one per
    core, capped at 4; 1 scores in this process), in archive order."""
    ruleset = compliance.ruleset_for_round(round_version) if format_for_round(round_version) is not MLP05 else None
    tables = RoundTables()
    with ResultScorer(round_version, ruleset, workers, small=archive.stat().st_size < 4 << 20) as scorer:
        for member in iter_members(archive):
            _route(tables, scorer, round_version, member)
        for path, row, events in scorer.results():
            _add_run(tables, round_version, path, row, events)
    return tables


def _route(tables: RoundTables, scorer: "ResultScorer", round_version: str, member) -> None:
    if member.refused:
        _quarantine(tables, round_version, member.path, member.refused)
        return
    parts = member.path.split("/")
    submitter, name = parts[0], parts[-1]
    if parts[1] == "systems":
        _add_system(tables, round_version, member.path, member.data, submitter, name[: -len(".json")])
    elif name == "entry.json" and len(parts) == 4:
        _add_system(tables, round_version, member.path, member.data, submitter, parts[2])
    elif len(parts) < 5:
        _quarantine(tables, round_version, member.path, "file directly in a system folder, outside any benchmark folder")
    elif name.endswith(".json"):
        if len(parts) == 5:
            _add_benchmark_json(tables, round_version, member, submitter, parts[2], parts[3])
    elif len(parts) != 5:
        _quarantine(tables, round_version, member.path,
                    "result file nested below the benchmark folder: the official scorer does not read it")
    else:
        scorer.submit(member.path, member.data)


def _add_run(tables: RoundTables, round_version: str, path: str, row: dict, events: dict[str, list]) -> None:
    submitter, _, system, benchmark, _ = path.split("/")
    row.update(round=round_version, submitter=submitter, system=system, benchmark=benchmark, run_file=path)
    tables.runs.append(row)
    for column, values in events.items():
        tables.events[column].extend(values)
    if row["mllog_lines"] == 0 and not row["parse_errors"]:
        _quarantine(tables, round_version, path, "no MLPerf log lines in this result file; the run is not scored")
    if row["parse_errors"]:
        _quarantine(tables, round_version, path,
                    f"{row['parse_errors']} log line(s) could not be parsed; the run is not scored",
                    row["first_parse_error"])


def _score_batch(batch: list[tuple[str, bytes]], round_version: str, ruleset: str | None) -> list[tuple]:
    out = []
    for path, data in batch:
        events = {c: [] for c in EVENT_COLUMNS}
        row = score_run(data, round_version, ruleset, events, path)
        row["ruleset"] = ruleset
        out.append((path, row, events))
    return out


def die_with_parent(refresh_pid: int) -> None:
    """Worker initializer: exit as soon as the refresh process is gone, so a killed refresh leaves
    no workers behind. (The fork server cannot do it: each worker holds the pipe the fork server
    watches, so neither sees the refresh die.) Waits on a pidfd (Linux), else checks every second."""
    import select
    import threading
    import time

    def watch() -> None:
        try:
            fd = os.pidfd_open(refresh_pid)
        except (AttributeError, OSError):  # not Linux, or already gone
            fd = None
        if fd is not None:
            select.select([fd], [], [])
        else:
            while True:
                try:
                    os.kill(refresh_pid, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-refresh", daemon=True).start()


class ResultScorer:
    """Scores result logs in worker processes while the archive is still being read.

    Batches keep the per-task overhead low; at most a few batches are in flight, so memory stays
    bounded whatever the archive's size. Workers start from a fork server that has imported only
    the parsing modules (no Dagster, no Polars)."""

    BATCH_BYTES = 4 << 20
    IN_FLIGHT = 6
    IN_FLIGHT_BYTES = 256 << 20  # a few huge logs must not pile up in memory either

    def __init__(self, round_version: str, ruleset: str | None, workers: int | None, small: bool = False):
        self.args = (round_version, ruleset)
        if workers is None:
            workers = int(os.environ.get("MLPERF_PARSE_WORKERS") or min(os.cpu_count() or 1, 4))
        self.pool = None
        if workers > 1 and not small:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload([__name__])
            # Workers exit when this process dies, not minutes later when their batch is done.
            self.pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=die_with_parent,
                                            initargs=(os.getpid(),))
        self.batch: list[tuple[str, bytes]] = []
        self.batch_bytes = 0
        self.pending: deque = deque()
        self.done: list[tuple] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def submit(self, path: str, data: bytes) -> None:
        self.batch.append((path, data))
        self.batch_bytes += len(data)
        if self.batch_bytes >= self.BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self.batch:
            return
        batch, self.batch, self.batch_bytes = self.batch, [], 0
        if self.pool is None:
            self.done.extend(_score_batch(batch, *self.args))
            return
        self.pending.append((self.pool.submit(_score_batch, batch, *self.args), sum(len(d) for _, d in batch)))
        while len(self.pending) > self.IN_FLIGHT or sum(n for _, n in self.pending) > self.IN_FLIGHT_BYTES:
            self.done.extend(self.pending.popleft()[0].result())

    def results(self) -> list[tuple]:
        self._flush()
        while self.pending:
            self.done.extend(self.pending.popleft()[0].result())
        return self.done


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
        doc = loads_bounded(member.data)
        factor = float(doc["scaling_factor"])
    except (ValueError, KeyError, TypeError) as exc:
        problem = f"scaling.json unusable ({type(exc).__name__}: {exc}); the benchmark gets no score"
        _quarantine(tables, round_version, member.path, problem, member.data[:2000].decode("utf-8", "replace"))
    tables.benchmarks.append({
        "round": round_version, "submitter": submitter, "system": system, "benchmark": benchmark,
        "scaling_factor": factor, "scaling_file": member.path, "scaling_problem": problem,
    })
