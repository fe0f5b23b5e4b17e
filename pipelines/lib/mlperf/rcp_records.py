"""The RCP records of one ruleset, as MLCommons' RCP checker computes them from a release's RCP files.

`rcp_tables` (`RcpTables`): the RCP JSON files of one usage and ruleset read with the checker's statistics (olympic
mean, stdev, minimum acceptable mean, max speedup: `RcpRecord`), pruned and interpolated between batch sizes as the
checker does. `rcp_rules` (`RcpRules`): the checker of the release that scores a round (its semantics, ruleset and
RCP files). `RcpError`: what the checker would raise. The verdict on a result folder: `rcp.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipelines.lib.mlperf.rcp_numerics import fdiv, min_acceptable_mean, np_interp, np_mean, np_std
from pipelines.lib.mlperf.rcp_semantics import RcpSemantics


class RcpError(Exception):
    """What the official checker would raise (a missing RCP file, an unknown benchmark, a log line it
    cannot read): the summarizer catches it and leaves RCP, GBS and samples_to_converge empty."""


@dataclass(frozen=True)
class RcpRecord:
    """One reference convergence point with the checker's statistics."""

    name: str
    benchmark: str
    bs: Any  # as the JSON file gives it (compared with the log's global_batch_size as is)
    epochs: tuple[float, ...]  # sorted
    mean: float  # olympic mean
    stdev: float  # np.std
    min_epochs: float  # the minimum acceptable submission mean
    max_speedup: float  # mean / min_epochs
    interpolated: bool = False

    def adjusted(self, max_speedup: float) -> RcpRecord:
        return RcpRecord(self.name, self.benchmark, self.bs, self.epochs, self.mean, self.stdev, self.min_epochs,
                         max_speedup, self.interpolated)


@dataclass
class CheckerRecords:
    """What one checker instance holds: every record (by name, in the checker's order) and the pruned ones."""

    full: dict[str, RcpRecord]
    pruned: dict[str, RcpRecord] | None


@dataclass
class RcpTables:
    """The RCP files of one usage and ruleset under one release's semantics. Records are computed on first
    use, per benchmark (3.0+) or for the whole usage (older releases load every benchmark at once)."""

    usage: str
    ruleset: str
    semantics: RcpSemantics
    files: Mapping[str, str]
    _cache: dict[str | None, CheckerRecords | str] = field(default_factory=dict, repr=False)

    def data(self, benchmark: str | None) -> CheckerRecords:
        """The checker's records for a result of `benchmark`; RcpError where the checker raises."""
        key = benchmark if self.semantics.benchmark_from_log else None
        if not isinstance(key, str | None):
            raise RcpError(f"KeyError: {key!r}")  # a benchmark that is not a name has no entry in submission_runs
        if key not in self._cache:
            try:
                self._cache[key] = self._load(benchmark)
            except RcpError as exc:
                self._cache[key] = str(exc)
        cached = self._cache[key]
        if isinstance(cached, str):
            raise RcpError(cached)
        return cached

    def records(self, benchmark: str, pruned: bool = False) -> tuple[RcpRecord, ...]:
        """A benchmark's records (pruned or all), in the checker's order."""
        data = self.data(benchmark)
        chosen = data.pruned if pruned and data.pruned is not None else data.full
        return tuple(r for r in chosen.values() if self.semantics.benchmark_from_log or r.benchmark == benchmark)

    def _load(self, benchmark: str | None) -> CheckerRecords:
        sem = self.semantics
        if not sem.supported:
            raise RcpError(f"checker semantics not supported: {', '.join(sem.unsupported)}")
        if self.ruleset not in sem.rulesets:
            raise RcpError(f"RCP Checker not supported in {self.ruleset}")
        try:
            if sem.benchmark_from_log:
                runs = sem.runs(self.usage, benchmark)
                full = self._records(benchmark, lambda _b: runs)
                pruned = self._pruned(full, [None], lambda _b: runs) if sem.prune_key else None
            else:
                benchmarks = sem.benchmarks(self.usage)
                full = {}
                for name in benchmarks:
                    full.update(self._records(name, lambda b: sem.runs(self.usage, b)))
                walk = sem.benchmarks(sem.prune_usage or self.usage) if sem.prune_key else []
                pruned = self._pruned(full, walk, lambda b: sem.runs(self.usage, b)) if sem.prune_key else None
        except KeyError as exc:
            raise RcpError(f"KeyError: {exc}") from exc
        except (ValueError, TypeError, AttributeError, IndexError) as exc:
            raise RcpError(f"{type(exc).__name__}: {exc}") from exc
        return CheckerRecords(full, pruned)

    def _raw(self, benchmark: str | None) -> dict:
        path = self.semantics.rcp_path(self.usage, self.ruleset, str(benchmark))
        if path not in self.files:
            raise RcpError(f"No RCP file {path}")
        try:
            return json.loads(self.files[path])
        except ValueError as exc:
            raise RcpError(f"{path}: {exc}") from exc

    def _records(self, benchmark: str | None, runs: Callable[[str], int]) -> dict[str, RcpRecord]:
        """One file's records with their statistics (`_process_raw_rcp_data`, `compute_rcp_stats`)."""
        sem = self.semantics
        raw = []
        for name, contents in self._raw(benchmark).items():
            unit = "samples to converge" if contents["Benchmark"] in sem.samples_unit_benchmarks else "Epochs to converge"
            contents["Hyperparams"]  # noqa: B018 - the checker copies it: a record without it fails
            raw.append((name, contents["Benchmark"], contents["BS"], contents[unit]))
        if sem.sorts_by_bs:
            raw.sort(key=lambda item: item[2])
        records = {}
        for name, bench, bs, epochs in raw:
            epochs = sorted(epochs)
            rejected = sem.rejected_for(bench)
            olympic = epochs[rejected:len(epochs) - rejected]
            mean = np_mean(olympic)
            stdev = np_std(olympic if sem.stdev_olympic else epochs)
            min_epochs = min_acceptable_mean(mean, stdev, len(epochs) - rejected * 2, lambda b=bench: runs(b),
                                             sem.alpha, sem.tolerance)
            records[name] = RcpRecord(name, bench, bs, tuple(epochs), mean, stdev, min_epochs, fdiv(mean, min_epochs))
        return records

    def interpolate(self, benchmark: str | None, target_bs, low: RcpRecord, high: RcpRecord,
                    runs: int | Callable[[], int]) -> RcpRecord:
        """`_create_interp_rcp`: mean and stdev interpolated linearly in the batch size; the reference
        count is twice the submission runs."""
        mean = np_interp(target_bs, low.bs, high.bs, low.mean, high.mean)
        stdev = np_interp(target_bs, low.bs, high.bs, low.stdev, high.stdev)
        submission_runs = runs() if callable(runs) else runs
        min_epochs = min_acceptable_mean(mean, stdev, submission_runs * 2, submission_runs,
                                         self.semantics.alpha, self.semantics.tolerance)
        return RcpRecord(f"{benchmark}_interp_{target_bs}", str(benchmark), target_bs, (), mean, stdev, min_epochs,
                         fdiv(mean, min_epochs), interpolated=True)

    def _pruned(self, full: dict[str, RcpRecord], benchmarks: Sequence[str | None],
                runs: Callable[[str], int]) -> dict[str, RcpRecord]:
        """`_prune_rcps`: drop the records of batch sizes below the fastest-converging one, then every record
        converging slower than the interpolation of its two neighbours."""
        key = _PRUNE_FIELDS[self.semantics.prune_key]
        pruned: dict[str, RcpRecord] = {}
        for benchmark in benchmarks:
            points = [r for r in full.values() if benchmark is None or r.benchmark == benchmark]
            fastest = min(points, key=key)  # ValueError on a benchmark without records, as the checker
            points = [r for r in points if r.bs >= fastest.bs]
            i = 1
            while i < len(points) - 1:
                interp = self.interpolate(benchmark if benchmark is not None else points[i].benchmark,
                                          points[i].bs, points[i - 1], points[i + 1],
                                          lambda b=benchmark, r=points[i]: runs(b if b is not None else r.benchmark))
                if key(points[i]) > key(interp):
                    del points[i]
                    i -= 1
                i += 1
            for point in points:
                for name, record in full.items():
                    if record.benchmark == point.benchmark and record.bs == point.bs:
                        pruned[name] = record
        return pruned


_PRUNE_FIELDS: dict[str | None, Callable[[RcpRecord], float]] = {
    "RCP Mean": lambda r: r.mean,
    "Min Epochs": lambda r: r.min_epochs,
}


def rcp_tables(files: Mapping[str, str], usage: str, ruleset: str, semantics: RcpSemantics) -> RcpTables:
    """The RCP records of `usage` and `ruleset` (e.g. `training`, `6.0.0`) from a release's RCP files: a
    mapping from the path relative to `rcp_checker/` ('training_6.0.0/rcps_bert.json') to the JSON text."""
    return RcpTables(usage, ruleset, semantics, files)


@dataclass(frozen=True)
class RcpRules:
    """The RCP checker of the release that scores a round: its semantics, the ruleset it checks against
    ('6.0.0') and its RCP files."""

    semantics: RcpSemantics
    usage: str
    ruleset: str
    files: Mapping[str, str]
    release: str  # the ref, for the record of what judged a result

    def tables(self) -> RcpTables:
        return rcp_tables(self.files, self.usage, self.ruleset, self.semantics)


def rcp_rules(rcp_files: Mapping[str, str], checker_source: str, usage: str, folder: str,
              release: str) -> RcpRules | None:
    """The release's RCP checker for a ruleset folder (`training_6.0.0`), or None when the release has no RCP
    checker (before 1.0) or one these semantics cannot express (RcpSemantics.unsupported)."""
    if not checker_source:
        return None
    semantics = RcpSemantics.from_checker_source(checker_source)
    found = re.search(r"(\d+\.\d+\.\d+)$", folder)
    if not semantics.supported or found is None:
        return None
    return RcpRules(semantics, usage, found.group(1), dict(rcp_files), release)
