"""MLCommons' RCP checker, reimplemented: the verdict and the normalization factor of one result folder.

A closed-division Training (or HPC) result is only valid when its runs converge no faster than the
Reference Convergence Points (RCPs) allow: `mlperf_logging/rcp_checker/rcp_checker.py` compares the
olympic mean of the runs' epochs (or samples) to converge with the reference runs of the same global
batch size (or an interpolation between two batch sizes), passes or fails the result, and gives the
factor by which a result faster than the reference mean must be slowed down (`scaling.json`). The
result summarizer prints that verdict as the `RCP` column of its detailed summary, with `GBS` and
`samples_to_converge`.

Facts carry over, code does not: the warehouse never runs MLCommons' code. It reads the RCP JSON files
and the checker source of a `mlcommons/logging` release *as data* and reproduces the logic in plain Python:
- `rcp_semantics`: how one release's checker behaves, read off its source (`RcpSemantics.from_checker_source`);
- `rcp_records`: the RCP records of one ruleset (`rcp_tables`) and the checker of a round's release (`rcp_rules`);
- `rcp_convergence`: what the checker reads from one result log (`run_convergence`, `rcp_lines`);
- `rcp_numerics`: numpy and scipy as the checker uses them (olympic mean, `np.interp`, Student's t);
- this module: the verdict of a result folder (`check_result`, as `check_directory(..., rcp_pass='pruned_rcps',
  set_scaling=True)` and the summarizer give it).
The logs' order matters where they disagree on the batch size or lack it: the checker takes the order
`glob` gives, which is the file system's; pass them in the folder's listing order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from pipelines.lib.mlperf.rcp_convergence import NOT_CONVERGED, RunConvergence
from pipelines.lib.mlperf.rcp_numerics import fdiv, np_mean
from pipelines.lib.mlperf.rcp_records import CheckerRecords, RcpError, RcpRecord, RcpTables
from pipelines.lib.mlperf.rcp_semantics import RcpSemantics

LABELS = {"RCP found": "Fail", "RCP Interpolation": "Interp. Fail", "Cannot find any RCPs": "No RCP"}


@dataclass(frozen=True)
class RcpVerdict:
    """The checker's verdict on one result folder and what the summarizer prints for it.

    passed/message: `check_directory`'s (None and the error when it raises); label: the summarizer's RCP
    column ('Pass', 'Fail', 'Interp. Fail', 'Missing', 'No RCP', 'Unknown state'; None: left empty);
    norm_factor: the rcp_score_norm (the factor even where the release only wrote it to scaling.json);
    scaling_written: what `set_scaling=True` writes into scaling.json (None: nothing written);
    scaling_deleted: an existing scaling.json is deleted (5.1+, when the result is evaluated and none is
    written); gbs, samples_to_converge: the summarizer's figures (None: left empty)."""

    passed: bool | None
    message: str
    label: str | None
    norm_factor: float
    scaling_written: float | None
    scaling_deleted: bool
    gbs: float | None
    samples_to_converge: float | None
    benchmark: str | None = None
    record: RcpRecord | None = None  # the RCP the submission was compared with
    mean_epochs: float | None = None  # the submission's olympic mean
    error: str | None = None


def _label(passed: bool, message: str) -> str:
    if passed:
        return "Pass"
    if message in LABELS:
        return LABELS[message]
    return "Missing" if "Missing" in message else "Unknown state"


def _combine(runs: Sequence[RunConvergence], semantics: RcpSemantics) -> tuple[Any, list | None, str | None]:
    """`get_submission_epochs`: (batch size, the runs' values or None, benchmark); RcpError where it raises."""
    for run in runs:
        if run.error:
            raise RcpError(run.error)
    if semantics.per_file_reader:
        return _combine_per_file(runs, semantics)
    return _combine_pass(runs, semantics)


def _combine_per_file(runs: Sequence[RunConvergence], semantics: RcpSemantics):
    bs, benchmark, values, not_converged = -1, None, [], 0
    for run in runs:
        values.append(run.value)
        not_converged += 0 if run.converged else 1
        if bs == -1:
            bs = run.gbs
        elif run.gbs != bs:
            return -1, None, None
        if benchmark is None:
            benchmark = run.benchmark
        elif run.benchmark != benchmark:
            return -1, None, None
    if not_converged > semantics.not_converged_allowed(benchmark):
        return bs, None, benchmark
    return bs, values, benchmark


def _combine_pass(runs: Sequence[RunConvergence], semantics: RcpSemantics):
    bs, carry, values, not_converged = -1, None, [], 0
    benchmark = runs[0].benchmark if runs else None
    for run in runs:
        for success, value in run.stops:
            if not success:
                values.append(NOT_CONVERGED)
                not_converged += 1
                continue
            value = value if value is not None else carry
            if value is None:
                raise RcpError("UnboundLocalError: conv_epoch read before any eval line")
            values.append(value)
        if run.last_value is not None:
            carry = run.last_value
        if run.gbs != -1:
            bs = run.gbs
    if not_converged > semantics.not_converged_allowed(benchmark):
        return bs, None, benchmark
    return bs, values, benchmark


@dataclass
class _Evaluation:
    passed: bool
    norm: float
    mean: float
    written: float | None
    record: RcpRecord


def _evaluate(record: RcpRecord, values: list, tables: RcpTables, benchmark: str | None,
              set_scaling: bool) -> _Evaluation:
    """`_eval_submission_record`: the olympic mean of the runs against the record's minimum mean."""
    sem = tables.semantics
    for offset in sem.speedup_offsets:
        if offset.applies(benchmark, tables.ruleset):
            record = record.adjusted(fdiv(record.mean, record.min_epochs - offset.offset))
    ordered = sorted(values)
    rejected = sem.rejected_for(record.benchmark)
    mean = np_mean(ordered[rejected:len(ordered) - rejected])
    norm = fdiv(record.mean, mean)
    norm = 1.0 if norm < 1 else norm
    passed = mean >= fdiv(record.mean, record.max_speedup)
    written = norm if passed and mean < record.mean and sem.norm_factor and set_scaling else None
    return _Evaluation(passed, norm if sem.norm_factor else 1.0, mean, written, record)


def _summarizer_figures(bs, values: list | None) -> tuple[float | None, float | None]:
    """GBS and samples_to_converge as the summarizer prints them: the mean of the sorted values without
    the fastest and the slowest (when there are at least 3), whatever the benchmark."""
    try:
        gbs = float(bs)
    except (TypeError, ValueError):
        gbs = None
    try:
        ordered = sorted(values) if values is not None else []
    except TypeError:
        return gbs, None
    return gbs, np_mean(ordered[1:-1]) if len(ordered) >= 3 else None


def _unevaluated(passed: bool | None, message: str, benchmark: str | None, gbs: float | None = None,
                 samples: float | None = None, error: bool = False) -> RcpVerdict:
    """A verdict reached before any RCP is compared: nothing normalized, scaling.json untouched."""
    label = None if error else _label(bool(passed), message)
    return RcpVerdict(passed=passed, message=message, label=label, norm_factor=1.0, scaling_written=None,
                      scaling_deleted=False, gbs=gbs, samples_to_converge=samples, benchmark=benchmark,
                      error=message if error else None)


def check_result(runs: Sequence[RunConvergence], tables: RcpTables, *, rcp_pass: str = "pruned_rcps",
                 set_scaling: bool = True, benchmark_folder: str | None = None) -> RcpVerdict:
    """The verdict of `check_directory` on a folder whose logs read as `runs` (in the folder's order:
    the batch-size and benchmark checks depend on it), with the RCPs of `tables`. `benchmark_folder`:
    the folder's name, the benchmark of releases before 3.0 (else taken from the runs' hint)."""
    sem = tables.semantics
    benchmark: str | None = None
    try:
        bs, values, benchmark = _combine(runs, sem)
        if not sem.benchmark_from_log:
            benchmark = benchmark_folder if benchmark_folder is not None else benchmark
        data = tables.data(benchmark)
    except RcpError as exc:
        return _unevaluated(None, str(exc), benchmark, error=True)
    gbs, samples = _summarizer_figures(bs, values)
    if bs == -1:
        return _unevaluated(False, "Could not detect global_batch_size", benchmark, gbs, samples)
    if values is None:
        return _unevaluated(False, "Insufficient convergence", benchmark, gbs)
    try:
        passed, message, evaluation = _decide(bs, values, tables, data, benchmark, rcp_pass, set_scaling)
    except (TypeError, KeyError, ValueError) as exc:
        return _unevaluated(None, f"{type(exc).__name__}: {exc}", benchmark, error=True)
    if evaluation is None:
        return _unevaluated(passed, message, benchmark, gbs, samples)
    return RcpVerdict(
        passed=passed,
        message=message,
        label=_label(passed, message),
        norm_factor=evaluation.norm,
        scaling_written=evaluation.written,
        scaling_deleted=evaluation.written is None and sem.resets_scaling and set_scaling,
        gbs=gbs,
        samples_to_converge=samples,
        benchmark=benchmark,
        record=evaluation.record,
        mean_epochs=evaluation.mean,
    )


def _decide(bs, values: list, tables: RcpTables, data: CheckerRecords, benchmark: str | None, rcp_pass: str,
            set_scaling: bool) -> tuple[bool, str, _Evaluation | None]:
    """check_directory's branches: the RCP of the batch size, an interpolation between the nearest batch
    sizes below and above, or the smallest RCP when the batch size is below every RCP."""
    sem = tables.semantics
    chosen = data.pruned if sem.prune_key is not None and rcp_pass == "pruned_rcps" else data.full
    if sem.prune_key is not None and rcp_pass not in ("pruned_rcps", "full_rcps"):
        raise ValueError(f"unknown rcp_pass {rcp_pass!r}")
    records = [r for r in chosen.values() if sem.benchmark_from_log or r.benchmark == benchmark]
    found = next((r for r in records if r.bs == bs), None)
    if found is not None:
        evaluation = _evaluate(found, values, tables, benchmark, set_scaling)
        return evaluation.passed, "RCP found", evaluation
    low = _nearest(records, lambda r, best: bs > r.bs > best, 0)
    high = _nearest(records, lambda r, best: bs < r.bs < best, 1e9)
    missing = f"Missing RCP, please submit RCP with BS = {bs}"
    if low is not None and high is not None:
        interp = tables.interpolate(benchmark, bs, low, high, partial(sem.runs, tables.usage, benchmark))
        evaluation = _evaluate(interp, values, tables, benchmark, set_scaling)
        return evaluation.passed, "RCP Interpolation", evaluation
    if low is not None:
        return False, missing, None
    if high is not None:
        smallest = _nearest(records, lambda r, best: r.bs < best, 1e9)
        evaluation = _evaluate(smallest, values, tables, benchmark, set_scaling)
        message = "RCP not found but slower convergence on smaller batch size" if evaluation.passed else missing
        return evaluation.passed, message, evaluation
    return False, "Cannot find any RCPs", None


def _nearest(records: Sequence[RcpRecord], better: Callable[[RcpRecord, Any], bool], start) -> RcpRecord | None:
    """The checker's `_find_top_min_rcp` / `_find_bottom_max_rcp` / `_find_min_rcp`: the first record
    strictly better than the best so far, starting from its sentinel (0, or 1e9)."""
    best, chosen = start, None
    for record in records:
        if better(record, best):
            best, chosen = record.bs, record
    return chosen
