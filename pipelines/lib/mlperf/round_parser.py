"""Turn one round's results archive into tables: runs, systems, benchmark folders, quarantine."""

from __future__ import annotations

import gc
import hashlib
import itertools
import math
import multiprocessing
import os
import pickle
import re
import time
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path

from pipelines.lib.io import limits
from pipelines.lib.io.jsonsafe import loads_bounded
from pipelines.lib.io.limits import limit
from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf import compliance, power, rcp, rule_language
from pipelines.lib.mlperf.archive import (
    ROUND_FOLDER,
    iter_members,
    results_folder_index,
    top_folder,
)
from pipelines.lib.mlperf.mllog import (
    MLL,
    MLLOG,
    MLP05,
    format_for_round,
    normalize_v05,
    parse_log,
)
from pipelines.lib.mlperf.precision import (
    describe_statements,
    log_precision,
    stated_precisions,
    statement_precision,
)
from pipelines.lib.mlperf.rounds import round_sort_key
from pipelines.lib.mlperf.rules import RuleSet
from pipelines.lib.mlperf.runs import run_facts
from pipelines.lib.mlperf.suites import TRAINING, Suite
from pipelines.lib.mlperf.systems import parse_system
from pipelines.lib.reference.events import EVENT_KEYS


@dataclass(frozen=True)
class RoundRules:
    """The rules a round's runs are judged by: as published (the round's own release) and today's
    pinned package. None means no rules exist for the generation (v0.5): start, stop, success."""

    published: RuleSet | None
    current: RuleSet | None
    rcp: rcp.RcpRules | None = None  # the published release's RCP checker (Training, from release 1.0 on)

    @cached_property
    def _differing_files(self) -> frozenset[str]:
        return self.published.differing_files(self.current)

    def same_verdict(self, configs: frozenset[str]) -> bool:
        """Would today's rules judge a log as the published ones did, given the rule files that
        decided the published verdict? Yes when those files are the same text in both releases and
        the two checkers differ in nothing those files exercise. (Most logs of a round run the same
        few config sets: the answer is kept per set.)"""
        known = self.__dict__.setdefault("_verdicts_by_configs", {})
        if configs not in known:
            known[configs] = self._same_verdict(configs)
        return known[configs]

    def _same_verdict(self, configs: frozenset[str]) -> bool:
        p, c = self.published, self.current
        if p is None or c is None:
            return p is None and c is None
        if p.entry != c.entry or configs & self._differing_files:
            return False
        text = "".join(p.config_text(name) or "" for name in sorted(configs))
        return p.semantics.exercised_by(text) == c.semantics.exercised_by(text)


EVENT_COLUMNS = ("run_file", "lineno", "time_ms", "key", "value", "epoch_num", "first_epoch_num",
                 "epoch_count", "samples_count", "status")


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


class RoundRejected(ValueError):
    """The round's new archive is refused; its previously staged data stays in the warehouse."""


class NoResultLogs(RoundRejected):
    """The archive holds no result log in any layout the parser knows: nothing to load."""


class RoundMismatch(RoundRejected):
    """The archive declares another round than the partition it was fetched for."""


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


_number = partial(number_or_none, text=False)  # event values: numbers only, never text


def add_events(events: dict[str, list], run_file: str, lines) -> None:
    (add_file, add_lineno, add_time, add_key, add_value, add_epoch, add_first_epoch, add_epoch_count,
     add_samples, add_status) = (events[c].append for c in EVENT_COLUMNS)
    seen_init_start = False
    for line in lines:
        key = line.key
        if key not in EVENT_KEYS:
            continue
        if key == "init_start":  # every rank logs it; the first one starts the timeline
            if seen_init_start:
                continue
            seen_init_start = True
        value = line.value if isinstance(line.value, dict) else {}
        md = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
        add_file(run_file)
        add_lineno(line.lineno)
        add_time(line.time_ms)
        add_key(key)
        add_value(_number(value.get("value")))
        add_epoch(_number(md.get("epoch_num")))
        add_first_epoch(_number(md.get("first_epoch_num")))
        add_epoch_count(_number(md.get("epoch_count")))
        add_samples(_number(md.get("samples_count")))
        status = md.get("status")
        add_status(status if isinstance(status, str) else None)


def _drop_reason(lines, parse_errors: int, ruleset: RuleSet | None, facts) -> tuple[str | None, frozenset[str]]:
    """Why a run does not count toward the score under `ruleset` (None if it counts), and the
    rule files that decided it."""
    configs: frozenset[str] = frozenset()
    messages: list[str] = []
    if ruleset is not None:
        verdict = compliance.check_log(lines, parse_errors, ruleset)
        passed, reason, configs, messages = verdict.passed, verdict.reason, verdict.configs, verdict.messages
    else:  # no official rules for this generation: the run must start, stop and succeed
        passed, reason = _basic_rules(lines, parse_errors)
    if not passed:
        # a benchmark the rules have no file for fails other checks too: that is the cause to name
        unknown = next((found for m in messages
                        if (found := unknown_benchmark_reason(m, ruleset, facts.benchmark_logged))), None)
        return unknown or f"compliance: {reason}", configs
    if facts.run_start_ms is None:
        return "run_start not recorded", configs
    if facts.run_stop_ms is None:
        return "run_stop not recorded", configs
    return None, configs


_MISSING_BENCHMARK_RULES = re.compile(r"^Could not find config file: ([\w.]+)/(closed|open)_(\w+)\.yaml$")
# A membership CHECK on submission_benchmark that fails: the rules list their benchmarks and this one is not among them
_BENCHMARK_NOT_LISTED = re.compile(r"^CHECK for 'submission_benchmark' failed in line \d+: v\['value'\] in \[")
UNKNOWN_BENCHMARK = "rules: no rules for benchmark"  # how every such drop reason starts (int_result_score)


def unknown_benchmark_reason(message: str | None, ruleset: RuleSet | None, benchmark: str | None = None) -> str | None:
    """A run dropped because its ruleset has no rules for its benchmark: no rule file for it (a benchmark the
    rules do not know, or one they retired: an older folder of the same release still has it), or a file but
    no place in the list of benchmarks the rules' submission_benchmark check allows."""
    if ruleset is None:
        return None
    if found := _MISSING_BENCHMARK_RULES.match(message or ""):
        folder, division, benchmark = found.groups()
        why = None
    elif benchmark and _BENCHMARK_NOT_LISTED.match(message or ""):
        folder, division = ruleset.folder, None
        why = "not among the benchmarks its submission_benchmark check allows"
    else:
        return None
    older = _folders_with_rules(ruleset, benchmark, division, but=folder)
    retired = f"retired: last in {older[-1]}" if older else None
    why = "; ".join(filter(None, (why, retired))) or "a benchmark these rules do not know"
    return f"{UNKNOWN_BENCHMARK} {benchmark!r} in {folder} of {ruleset.ref} ({why})"


def _folders_with_rules(ruleset: RuleSet, benchmark: str, division: str | None, but: str) -> list[str]:
    """The folders of the release older than `but`, oldest first, with a rule file for the benchmark."""
    def version(name: str) -> list[int]:
        return [int(n) for n in re.findall(r"\d+", name)]

    names = tuple(f"/{d}_{benchmark}.yaml" for d in ((division,) if division else ("closed", "open")))
    return sorted({name.split("/", 1)[0] for name, _ in ruleset.files
                   if name.endswith(names) and version(name.split("/", 1)[0]) < version(but)}, key=version)


def score_run(data: bytes, round_version: str, rules: RoundRules, events: dict[str, list] | None = None,
              run_file: str = "") -> dict:
    """Everything the warehouse keeps about one result file, and whether it counts toward the score
    as published (the round's own rules) and under today's rules."""
    fmt = format_for_round(round_version)
    log = parse_log(data, fmt)
    lines = normalize_v05(log.lines) if fmt is MLP05 else log.lines
    facts = run_facts(lines)
    drop_reason, configs = _drop_reason(lines, len(log.errors), rules.published, facts)
    if rules.same_verdict(configs):  # the same rule files and checker behaviour decided
        current_drop_reason = drop_reason
    else:
        current_drop_reason, _ = _drop_reason(lines, len(log.errors), rules.current, facts)
    statements = stated_precisions(lines)  # the 6.0 rules' keys win over configuration lines
    precision_logged, precision_evidence, precision_unmapped = statement_precision(statements)
    if precision_logged is None and precision_unmapped is None:
        precision_logged, precision_evidence = log_precision(data)
    if events is not None:
        add_events(events, run_file, lines)
    convergence = None
    if rules.rcp is not None:
        keys = result_keys(run_file.split("/")) if run_file else None
        convergence = rcp.run_convergence(lines, rules.rcp.semantics, rules.rcp.ruleset,
                                          benchmark_hint=keys[2][0] if keys and keys[2] else None)
    minutes = None
    if facts.run_start_ms is not None and facts.run_stop_ms is not None:
        minutes = (facts.run_stop_ms - facts.run_start_ms) / 60.0 / 1000.0
    row = dict(vars(facts))  # asdict without its deep copy: every field is a number, a string or None
    row.update(precision_logged=precision_logged, precision_evidence=precision_evidence,
               precision_statements=describe_statements(statements), precision_statement_unmapped=precision_unmapped)
    row.update(
        passed_compliance=not (drop_reason or "").startswith("compliance:"),
        drop_reason=drop_reason,
        current_rules_drop_reason=current_drop_reason,
        ruleset=rules.published.folder if rules.published else None,
        ruleset_ref=rules.published.ref if rules.published else None,
        time_to_train_minutes=minutes,
        log_lines=log.total_lines,
        mllog_lines=len(log.lines),
        parse_errors=len(log.errors),
        first_parse_error=(log.errors[0][1] + ": " + log.errors[0][0][:300]) if log.errors else None,
    )
    if convergence is not None:
        row[RCP_READING] = convergence  # the parent takes it out: it judges whole results (rcp_verdicts)
    return row


RCP_READING = "_rcp_reading"


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
    number = _number(value)
    return number if number is not None and math.isfinite(number) else None


def _basic_rules(lines, parse_errors: int) -> tuple[bool, str | None]:
    if parse_errors:
        return False, "Log lines had parsing errors."
    stops = [line for line in lines if line.key == "run_stop"]
    if not any(line.key == "run_start" for line in lines):
        return False, "Required EXACTLY_ONE occurrence of 'run_start' but found 0"
    if not stops:
        return False, "Required EXACTLY_ONE occurrence of 'run_stop' but found 0"
    if stops[0].value.get("metadata", {}).get("status") != "success":
        return False, "run did not reach its target (run_stop status is not success)"
    return True, None


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


def result_keys(parts: list[str]) -> tuple[str, str, list[str]] | None:
    """(submitter, system, the path below the system folder) of a member under a `results` folder.
    In the v0.5 layout the system key is `<entry>[/<folder>]/<system>`: Google names every system
    folder `tpu`, and Intel's entries repeat system names, so the folder alone is not a key."""
    i = results_folder_index(parts)
    if i is None or len(parts) < i + 3:
        return None
    if i == 1:
        return parts[0], parts[2], parts[3:]
    return parts[1], "/".join([*parts[2:i], parts[i + 1]]), parts[i + 2:]


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


def _score_batch(batch: list[tuple[str, bytes]], round_version: str, rules: RoundRules,
                 deadline: float | None = None) -> list[tuple]:
    # A log is parsed into ~10^5 small objects with no reference cycles, freed as soon as the log is
    # scored: the cycle collector would only walk them again and again. It runs once per batch.
    collecting = gc.isenabled()
    gc.disable()
    rule_language.set_deadline(deadline)
    try:
        out = []
        for path, data in batch:
            if deadline is not None and time.time() > deadline:
                raise ScoringDeadline(round_version)
            events = {c: [] for c in EVENT_COLUMNS}
            row = score_run(data, round_version, rules, events, path)
            # the file as published (hashed while the archive was read), to spot it again
            row["log_sha256"] = getattr(data, "sha256", None) or hashlib.sha256(data).hexdigest()
            row["log_format"] = log_format(data)
            out.append((path, row, events))
    finally:
        if collecting:
            gc.enable()
    return out


# In a worker process: the round and rules of the batches it scores, unpickled once per round (the
# pool outlives a round). Every batch carries them pickled: a memory copy of a few hundred KB,
# which only a worker that has not seen the round yet unpickles.
_WORKER_ROUND: tuple[str, tuple[str, RoundRules]] | None = None


def _score_worker_batch(batch: list[tuple[str, bytes]], round_key: str, round_blob: bytes,
                        deadline: float | None = None) -> list[tuple]:
    global _WORKER_ROUND
    if _WORKER_ROUND is None or _WORKER_ROUND[0] != round_key:
        _WORKER_ROUND = (round_key, pickle.loads(round_blob))
    return _score_batch(batch, *_WORKER_ROUND[1], deadline=deadline)


class ScoringDeadline(RoundRejected):
    """Parsing and scoring a round took longer than MLPERF_SCORING_DEADLINE_SECONDS."""

    def __init__(self, round_version: str):
        super().__init__(f"{round_version}: parsing and scoring did not finish within {limit('scoring_deadline_seconds'):,g} s "
                         "(MLPERF_SCORING_DEADLINE_SECONDS): its worker processes were ended; the round keeps its "
                         "previous data")


# One pool per refresh process, started by the first round that needs it and kept for the next ones
# (starting workers costs more than scoring a small round: an archive under SMALL_ARCHIVE_BYTES is scored in
# the refresh's own process unless the pool is already running). Its workers hold the limits of when it started:
# a pool of other limits (a later in-process refresh configured differently) is replaced.
_POOL: tuple[tuple, ProcessPoolExecutor] | None = None  # ((owner pid, workers, limits), pool)
_ROUND_KEYS = itertools.count()
SMALL_ARCHIVE_BYTES = 4 << 20


def small_archive(path: Path) -> bool:
    return path.stat().st_size < SMALL_ARCHIVE_BYTES


def _pool_key(workers: int) -> tuple:
    return os.getpid(), workers, tuple(sorted(limits.current().items()))


def pool_running(workers: int) -> bool:
    """Whether this process already has a scoring pool of `workers` with today's limits."""
    return _POOL is not None and _POOL[0] == _pool_key(workers)


def _own_pool() -> ProcessPoolExecutor | None:
    """This process's pool (a forked child sees its parent's, which is not its own)."""
    return _POOL[1] if _POOL is not None and _POOL[0][0] == os.getpid() else None


def _shared_pool(workers: int) -> ProcessPoolExecutor:
    global _POOL
    if pool_running(workers):
        return _POOL[1]
    if (stale := _own_pool()) is not None:
        stale.shutdown(wait=False, cancel_futures=True)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    # Workers exit when this process dies, not minutes later when their batch is done.
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_start_worker,
                               initargs=(os.getpid(), limits.current()))
    _POOL = (_pool_key(workers), pool)
    return pool


def default_workers() -> int:
    """Scoring processes: one per core, at most the `max_parse_workers` limit."""
    return min(os.cpu_count() or 1, limit("max_parse_workers"))


def end_pool() -> None:
    """Kill this process's scoring workers now (a deadline passed): shutting down would wait for them."""
    global _POOL
    if (pool := _own_pool()) is not None:
        for process in list(getattr(pool, "_processes", {}).values()):  # the stdlib keeps no public handle
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
    _POOL = None


def shutdown_pool() -> None:
    """Stop the scoring pool of this process, if any (its queues' semaphores are released with it)."""
    global _POOL
    if (pool := _own_pool()) is not None:
        pool.shutdown(wait=True, cancel_futures=True)
    _POOL = None


def _start_worker(refresh_pid: int, limit_values: dict[str, float]) -> None:
    """A scoring process: the refresh's limits in force, and gone when the refresh is."""
    limits.configure(limit_values)
    die_with_parent(refresh_pid)


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

    def __init__(self, round_version: str, rules: RoundRules, workers: int | None, small: bool = False):
        self.args = (round_version, rules)
        self.round_version = round_version
        self.deadline = time.time() + limit("scoring_deadline_seconds")
        if workers is None:
            workers = default_workers()
        self.pool = None
        # a small archive is scored here unless the refresh's pool is already running
        if workers > 1 and (not small or pool_running(workers)):
            self.pool = _shared_pool(workers)
            self.round_key = f"{os.getpid()}-{next(_ROUND_KEYS)}"
            self.round_blob = pickle.dumps((round_version, rules), protocol=pickle.HIGHEST_PROTOCOL)
        self.batch: list[tuple[str, bytes]] = []
        self.batch_bytes = 0
        self.pending: deque = deque()
        self.done: list[tuple] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # The pool stays for the next round; a round that failed part-way leaves nothing queued on it
        # and waits for the batches already running.
        for future, _ in self.pending:
            future.cancel()
        for future, _ in self.pending:
            if not future.cancelled():
                try:
                    future.exception()
                except BaseException:  # cancelled meanwhile, or the pool broke: nothing to wait for
                    pass
        self.pending.clear()

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
            try:
                self.done.extend(_score_batch(batch, *self.args, deadline=self.deadline))
            except rule_language.RuleLimitExceeded as exc:
                raise self._over(exc) from None
            return
        self.pending.append((self.pool.submit(_score_worker_batch, batch, self.round_key, self.round_blob,
                                              self.deadline), sum(len(d) for _, d in batch)))
        while len(self.pending) > self.IN_FLIGHT or sum(n for _, n in self.pending) > self.IN_FLIGHT_BYTES:
            self.done.extend(self._wait(self.pending.popleft()[0]))

    def _wait(self, future) -> list[tuple]:
        """A batch's rows; past the round's deadline the workers are ended and the round refused."""
        try:
            return future.result(timeout=max(0.0, self.deadline - time.time()))
        except FuturesTimeout:
            end_pool()
            raise ScoringDeadline(self.round_version) from None
        except rule_language.RuleLimitExceeded as exc:
            raise self._over(exc) from None
        except BrokenProcessPool:  # a worker died: the next round starts a new pool
            end_pool()
            raise

    def _over(self, exc: BaseException) -> RoundRejected:
        if isinstance(exc, rule_language.RuleDeadline):
            return ScoringDeadline(self.round_version)
        return RoundRejected(f"{self.round_version}: a rule of the round's rules went past its budget ({exc}); "
                             "the round keeps its previous data")

    def results(self) -> list[tuple]:
        self._flush()
        while self.pending:
            self.done.extend(self._wait(self.pending.popleft()[0]))
        return self.done


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


# What a result log's own lines declare: the token of its logging generation. MLLOG lines (v0.7+)
# carry no round; `:::MLPv0.5.0` names it; `:::MLL` is v0.6's. (`:::MLL` is a prefix of `:::MLLOG`.)
_LOG_FORMATS = {MLLOG: "MLLOG", MLP05: "MLPv0.5.0", MLL: "MLL"}
_ROUNDS_OF_FORMAT = {"MLPv0.5.0": "v0.5", "MLL": "v0.6", "MLLOG": "v0.7 or later"}


def log_format(data: bytes) -> str | None:
    for fmt, name in _LOG_FORMATS.items():
        if fmt.token in data:
            return name
    return None


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
    expected = _LOG_FORMATS[format_for_round(round_version)]
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
