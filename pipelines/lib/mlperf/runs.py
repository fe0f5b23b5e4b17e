"""What one result log says about its run: timing, batch size, seed, convergence, throughput.

`run_facts` reads them all. Progress is read in the unit the log counts it in and said so (`run_progress.py`:
samples, tokens, epochs or steps; SQL converts every unit to samples); the throughput: `run_throughput.py`; the
convergence point, where the RCP checker reads it: `convergence` below.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.lib.io.numbers import number_or_none as _number
from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.mlperf.run_progress import (
    EVAL_KEYS,
    LOGGED_ALIASES,
    counting,
    eval_field,
    eval_progress,
    field_unit,
    line_metadata,
    line_value,
    progress_offset,
    run_start_stop,
)
from pipelines.lib.mlperf.run_throughput import throughput_given_evals


@dataclass
class RunFacts:
    run_start_ms: float | None
    run_stop_ms: float | None
    status: str | None  # run_stop's metadata status ("success", "aborted", ...)
    global_batch_size: float | None
    seed: float | None
    convergence_progress: float | None  # the convergence point, in `convergence_counted_in`
    convergence_counted_in: str | None  # one of PROGRESS_UNITS
    convergence_source: str | None  # the key it was read from ("eval_accuracy samples_count", ...)
    convergence_null_reason: str | None
    benchmark_logged: str | None
    steady_state_throughput: float | None  # in `throughput_unit`: the log's own progress unit per second
    throughput_unit: str | None  # "<one of PROGRESS_UNITS>/s"; SQL converts to samples/s
    throughput_counting: str | None = None  # running_total, block_count, epoch_markers, eval_markers
    progress_counted_in: str | None = None  # the unit of this log's eval progress counters
    throughput_null_reason: str | None = None
    progress_offset: float = 0.0  # the log's epoch counter at the start of training (1 in some DLRM logs)
    train_samples_logged: float | None = None  # `train_samples` before run_start: the log's samples per epoch
    # the instance one model trains on, as HPC logs state it (the weak-scaling metric reads them)
    number_of_nodes: float | None = None
    accelerators_per_node: float | None = None


@dataclass(frozen=True)
class Convergence:
    """The convergence point: where the RCP checker reads it, in the unit the log counts it in."""

    progress: float | None
    counted_in: str | None
    source: str | None
    null_reason: str | None = None


# Stable Diffusion converges at the first evaluation where both metrics pass (the RCP checker's rule)
_SD_TARGET = {"FID": ("<=", 90.0), "CLIP": (">=", 0.15)}


def convergence(lines: list[LogLine], benchmark: str | None, global_batch_size: float | None,
                field: str | None, unit: str | None, offset: float = 0.0) -> Convergence:
    """The RCP checker's convergence point: the last eval before a successful run_stop (Stable
    Diffusion: the first eval passing its targets), read from the log's progress field (`field`) and
    in its unit. A sample count below one global batch is no sample count (early BERT logs give
    epoch_num 1 at every eval): then `train_samples` logged after run_start is read, as the RCP
    checker reads BERT with `bert_train_samples`. `unit` is the field's unit in this log (`field_unit`
    over all its evaluations). Epochs are net of the log's epoch offset."""
    start, _ = run_start_stop(lines)
    last: dict[str, float] = {}
    sd_evals: dict[float, dict] = {}
    for line in lines:
        key = line.key
        if key in EVAL_KEYS:
            md = line_metadata(line)
            if field is not None and _number(md.get(field)) is not None:
                last["eval"] = _number(md.get(field))
                if benchmark == "stable_diffusion":
                    sd_evals.setdefault(last["eval"], {})[md.get("metric")] = _number(line_value(line))
        elif key == "train_samples" and start is not None and line.time_ms >= start:
            value = _number(line_value(line))
            if value is not None:
                last["train_samples"] = value
        elif key == "run_stop":
            if line_metadata(line).get("status") != "success":
                return Convergence(None, None, None, "the run did not stop with status success")
            break
    else:
        return Convergence(None, None, None, "no run_stop in the log")
    source = f"eval_accuracy {field}"
    if benchmark == "stable_diffusion":
        passing = [step for step, metrics in sd_evals.items()
                   if all(metrics.get(m) is not None and (metrics[m] <= v if op == "<=" else metrics[m] >= v)
                          for m, (op, v) in _SD_TARGET.items())]
        last["eval"] = min(passing) if passing else None
        source = f"first eval_accuracy {field} with FID <= 90 and CLIP >= 0.15"
        if last["eval"] is None:
            return Convergence(None, None, None, "no evaluation reached both the FID and the CLIP target")
    value = last.get("eval")
    batch = global_batch_size or 0
    if value is not None and unit == "samples" and field == "epoch_num" and value < batch:
        value = None  # not a sample count: fewer samples than one batch
    if value is None and "train_samples" in last and counting(benchmark).unit in ("samples", None) \
            and last["train_samples"] >= batch:
        return Convergence(last["train_samples"], "samples", "train_samples after run_start")
    if value is None:
        what = field or "no epoch_num, samples_count or step_num"
        return Convergence(None, None, None, f"the evaluations before run_stop count no progress ({what})")
    if unit == "epochs":
        value = round(value - offset, 3)
    return Convergence(value, unit, source)


def train_samples_before_run(lines: list[LogLine]) -> float | None:
    """`train_samples` logged before run_start: the training set's size as the run loaded it. (After
    run_start the key means other things: samples or steps trained, evaluation samples.)"""
    for line in lines:
        if line.key == "run_start":
            return None
        if line.key == "train_samples":
            return _number(line_value(line))
    return None


# Every key the facts below are read from. run_facts works on these lines only (in log order): the
# rest of a log (per-step stats, weight initialization, one init_start per rank) is most of it.
_FACT_KEYS = frozenset({
    "run_start", "run_stop", "global_batch_size", "seed", "submission_benchmark", "block_start",
    "block_stop", "eval_accuracy", "eval_error", "eval_start", "epoch_start", "epoch_stop", "train_samples",
    "number_of_nodes", "accelerators_per_node",
})


def run_facts(lines: list[LogLine]) -> RunFacts:
    lines = [line for line in lines if type(line.key) is str and line.key in _FACT_KEYS]
    start, stop = run_start_stop(lines)
    status = gbs = seed = benchmark = nodes = per_node = None
    for line in lines:
        key = line.key
        if key == "run_stop" and status is None:
            status = line_metadata(line).get("status")
        elif key == "global_batch_size" and gbs is None:
            gbs = _number(line_value(line))
        elif key == "seed" and seed is None:
            seed = _number(line_value(line))
        elif key == "submission_benchmark" and benchmark is None:
            benchmark = line_value(line)
        elif key == "number_of_nodes" and nodes is None:
            nodes = _number(line_value(line))
        elif key == "accelerators_per_node" and per_node is None:
            per_node = _number(line_value(line))
    logged = benchmark if isinstance(benchmark, str) else None
    resolved = LOGGED_ALIASES.get(logged, logged)
    field = eval_field(lines, resolved)
    evals = eval_progress(lines, field)
    throughput = throughput_given_evals(lines, resolved, evals, field)
    offset = progress_offset(lines, evals)
    converged = convergence(lines, resolved, gbs, field, field_unit(field, resolved, [p for _, p in evals]), offset)
    return RunFacts(
        run_start_ms=start,
        run_stop_ms=stop,
        status=str(status) if status is not None else None,
        global_batch_size=gbs,
        seed=seed,
        convergence_progress=converged.progress,
        convergence_counted_in=converged.counted_in,
        convergence_source=converged.source,
        convergence_null_reason=converged.null_reason,
        benchmark_logged=logged,
        steady_state_throughput=throughput.per_second,
        throughput_unit=f"{throughput.counted_in}/s" if throughput.per_second is not None else None,
        throughput_counting=throughput.counting,
        progress_counted_in=throughput.evals_counted_in,
        throughput_null_reason=throughput.null_reason,
        progress_offset=offset,
        train_samples_logged=train_samples_before_run(lines),
        number_of_nodes=nodes,
        accelerators_per_node=per_node,
    )
