"""What one result log says about its run: timing, batch size, seed, convergence, throughput.

Progress is read in the unit the log counts it in and said so; SQL converts every unit to samples:
- `samples`: the benchmark's own samples (images, sequences, volumes, ...), logged as `samples_count`,
  or as `epoch_num` by BERT and the v1.0-era NLP logs;
- `tokens`: GPT-3 counts tokens in `epoch_num` (a sample is a 2,048-token sequence);
- `epochs`: passes over the training set (`epoch_num`), converted with the run's samples per epoch;
- `steps`: optimizer steps (`step_num`, Stable Diffusion in v3.1), converted with the global batch.
The unit of each benchmark comes from `benchmarks.csv` (`convergence_unit`); a benchmark it lacks is read
from the keys its log uses.
"""

from __future__ import annotations

import csv
import functools
import statistics
from bisect import bisect_right
from dataclasses import dataclass

from pipelines.lib.io.numbers import number_or_none as _number
from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.reference.seeds import BENCHMARK_DATASETS_CSV, BENCHMARKS_CSV

PROGRESS_UNITS = ("samples", "tokens", "epochs", "steps")  # the units a log counts progress in


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


def _value(line: LogLine):
    v = line.value
    return v.get("value") if isinstance(v, dict) else v


def _metadata(line: LogLine) -> dict:
    v = line.value
    md = v.get("metadata") if isinstance(v, dict) else None
    return md if isinstance(md, dict) else {}


def run_start_stop(lines: list[LogLine]) -> tuple[float | None, float | None]:
    """The official scorer's pick: scan until both are seen, keeping the latest of each."""
    start = stop = None
    for line in lines:
        if line.key == "run_start":
            start = line.time_ms
        if line.key == "run_stop":
            stop = line.time_ms
        if start is not None and stop is not None:
            break
    return start, stop


@dataclass(frozen=True)
class Counting:
    """How a benchmark's logs count progress, from the seeds: the unit of its convergence point
    (`benchmarks.csv` convergence_unit: samples, tokens or epochs) and the sizes its training sets have
    had (`benchmark_datasets.csv`), to recognise logs that count epochs in samples."""

    unit: str | None  # None: the benchmark is in no seed; its log's keys decide
    dataset_sizes: tuple[float, ...] = ()

    @property
    def counts_epochs(self) -> bool:
        return self.unit == "epochs"


@functools.cache
def _countings() -> dict[str, Counting]:
    with BENCHMARKS_CSV.open(newline="") as fh:
        units = {row["benchmark"].strip(): row["convergence_unit"].strip() for row in csv.DictReader(fh)}
    sizes: dict[str, set[float]] = {}
    with BENCHMARK_DATASETS_CSV.open(newline="") as fh:
        for row in csv.DictReader(fh):
            size = _number(row.get("samples_per_epoch"))
            if size:
                sizes.setdefault(row["benchmark"].strip(), set()).add(size)
    return {name: Counting(unit, tuple(sorted(sizes.get(name, ())))) for name, unit in units.items()}


def counting(benchmark: str | None) -> Counting:
    return _countings().get(benchmark or "", Counting(None))


# the v0.6 Mask R-CNN logs name their benchmark "mask"
_LOGGED_ALIASES = {"mask": "maskrcnn"}


@dataclass(frozen=True)
class Throughput:
    """Steady-state progress per second of one log.

    `per_second` is in `counted_in` units (one of PROGRESS_UNITS). `counting` says how a block's work
    was read; `null_reason` says why there is no figure."""

    per_second: float | None
    counted_in: str | None
    counting: str | None
    null_reason: str | None = None
    evals_counted_in: str | None = None  # the unit of the evals' progress


@dataclass(frozen=True)
class _Block:
    start_ms: float
    stop_ms: float
    start_md: dict
    stop_md: dict


def _blocks(lines: list[LogLine]) -> list[_Block]:
    """Training blocks in start order. A stop closes the open start with the same first_epoch_num
    (some logs open the next block before closing the last one), else the latest open start."""
    blocks, open_starts = [], []
    for line in lines:
        if line.key == "block_start":
            open_starts.append(line)
        elif line.key == "block_stop" and open_starts:
            first = _metadata(line).get("first_epoch_num")
            match = next((s for s in reversed(open_starts) if first is not None
                          and _metadata(s).get("first_epoch_num") == first), open_starts[-1])
            open_starts.remove(match)
            # a start left open by a later start never closes: drop the older ones
            open_starts = [s for s in open_starts if s.time_ms >= match.time_ms]
            block = _Block(match.time_ms, line.time_ms, _metadata(match), _metadata(line))
            if not blocks or blocks[-1] != block:  # some logs repeat every block line (one per rank)
                blocks.append(block)
    return sorted(blocks, key=lambda b: b.start_ms)


def _is_running_total(values: list[float]) -> bool:
    """A cumulative counter: strictly increasing across blocks (from 0, or over at least 3 blocks)."""
    rising = all(b > a for a, b in zip(values, values[1:], strict=False))
    return len(values) >= 2 and rising and (values[0] == 0 or len(values) >= 3)


def _block_work(blocks: list[_Block]) -> tuple[list[float | None], str | None, str | None]:
    """Work of each block in the log's progress unit, the counting style detected, and the field."""
    for field in ("samples_count", "epoch_count"):
        starts = [_number(b.start_md.get(field)) for b in blocks]
        if not blocks or any(v is None for v in starts):
            continue
        if _is_running_total(starts):
            work = []
            for i, b in enumerate(blocks):
                stop = _number(b.stop_md.get(field))
                if stop is not None and stop > starts[i]:
                    work.append(stop - starts[i])
                elif i + 1 < len(blocks):
                    work.append(starts[i + 1] - starts[i])
                else:
                    work.append(None)
            return work, "running_total", field
        return starts, "block_count", field
    return [None] * len(blocks), None, None


_EVALS = ("eval_accuracy", "eval_error")
_PROGRESS_FIELDS = ("samples_count", "epoch_num", "step_num")


def eval_field(lines: list[LogLine], benchmark: str | None) -> str | None:
    """The metadata key the log's evals count progress in: an epoch-counted benchmark's `epoch_num`
    first, a sample-counted one's `samples_count` first (several logs carry both), `step_num` last."""
    present = set()
    for line in lines:
        if line.key in _EVALS:
            md = _metadata(line)
            present.update(k for k in _PROGRESS_FIELDS if _number(md.get(k)) is not None)
    order = ("epoch_num", "samples_count", "step_num") if counting(benchmark).counts_epochs else _PROGRESS_FIELDS
    return next((k for k in order if k in present), None)


def _whole_datasets(values: list[float | None], sizes: tuple[float, ...]) -> bool:
    """Every count is a whole number (≥ 1) of one of the benchmark's training-set sizes: epochs
    counted in samples (some unet3d logs, for blocks or evals or both)."""
    values = [v for v in values if v]
    return bool(values) and any(
        size > 1 and all(v >= size and (v / size).is_integer() for v in values) for size in sizes)


def field_unit(field: str | None, benchmark: str | None, values: list[float | None]) -> str | None:
    """The unit (one of PROGRESS_UNITS) of a progress field (`samples_count`, `epoch_num`/`epoch_count`,
    `step_num`) in this benchmark's log, given the values the log holds in it."""
    if field is None:
        return None
    if field == "step_num":
        return "steps"
    if field == "samples_count":
        return "samples"
    unit = counting(benchmark).unit
    if unit in ("samples", "tokens"):  # BERT and GPT-3 count their samples (tokens) in epoch_num
        return unit
    if unit == "epochs" and _whole_datasets(values, counting(benchmark).dataset_sizes):
        return "samples"
    return "epochs"


def _eval_progress(lines: list[LogLine], field: str | None) -> list[tuple[float, float]]:
    """(time, progress) at each eval during the run, in the log's progress field; one point per
    progress value. Evals logged after run_stop (offline evaluation) carry no training time."""
    if field is None:
        return []
    start, stop = run_start_stop(lines)
    points: dict[float, float] = {}
    for line in lines:
        if line.key in _EVALS:
            progress = _number(_metadata(line).get(field))
            in_run = (start is None or line.time_ms >= start) and (stop is None or line.time_ms <= stop)
            if progress is not None and progress > 0 and in_run:
                points.setdefault(progress, line.time_ms)
    return sorted((t, p) for p, t in points.items())


def progress_offset(lines: list[LogLine], evals: list[tuple[float, float]]) -> float:
    """Where the log's epoch counter starts: 1 in logs that number the first epoch 1 and log the
    evals inside it as 1.05, 1.10... (DLRM v1.0/v2.1), else 0. Subtract it from eval progress."""
    first_epoch = next((_number(_metadata(line).get("epoch_num")) for line in lines if line.key == "epoch_start"), None)
    if first_epoch and evals and first_epoch < evals[0][1] < first_epoch + 1:
        return first_epoch
    return 0.0


def _rate_after_first(timed_work: list[tuple[float, float]]) -> float | None:
    """Median work per second over all (work, seconds) intervals but the first (warm-up)."""
    return _median_rate(timed_work[1:])


def _median_rate(timed_work: list[tuple[float, float]]) -> float | None:
    rates = [w / t for w, t in timed_work]
    return statistics.median(rates) if rates else None


def _eval_times(lines: list[LogLine]) -> list[float]:
    return [line.time_ms for line in lines if line.key in ("eval_start", "eval_accuracy")]


def _steady_blocks(blocks: list[_Block], timed: list[tuple], eval_times: list[float]) -> tuple[list[tuple], bool]:
    """The (work, seconds) of the blocks that are steady-state training: no evaluation starts or
    reports inside them, and not the first block (warm-up) unless it is the only such block (logs
    that evaluate inside every later block). Without any training-only block: all but the first.
    The flag says whether the blocks returned are training only (beyond the first)."""
    evals = sorted(eval_times)

    def evaluates(b: _Block) -> bool:  # some eval time strictly inside the block: the first after its start
        i = bisect_right(evals, b.start_ms)
        return i < len(evals) and evals[i] < b.stop_ms

    pure = [i for i, b in enumerate(blocks) if not evaluates(b)]
    if pure and pure != [0]:
        return [timed[i] for i in pure if i != 0], True
    if pure and len(blocks) >= 2:  # only the first block trains without evaluating: it is the steady state
        return [timed[0]], False
    return timed[1:], False


def _epoch_marker_rate(lines: list[LogLine]) -> float | None:
    """Epochs per second from epoch_start/epoch_stop pairs (one epoch each), the first excluded.
    None when the pairs cover less than half the time from the first start to the last stop: the
    markers do not bracket the training (logged asynchronously, or the epochs are not the work)."""
    epoch_rates, open_start, first_ms, last_ms = [], None, None, None
    for line in lines:
        if line.key == "epoch_start":
            open_start = line
            first_ms = line.time_ms if first_ms is None else first_ms
        elif line.key == "epoch_stop" and open_start is not None:
            seconds = (line.time_ms - open_start.time_ms) / 1000.0
            if seconds > 0:
                epoch_rates.append((1.0, seconds))
            open_start, last_ms = None, line.time_ms
    if not epoch_rates or sum(t for _, t in epoch_rates) < 0.5 * (last_ms - first_ms) / 1000.0:
        return None
    return _rate_after_first(epoch_rates)


def steady_state_throughput(lines: list[LogLine], benchmark: str | None = None) -> Throughput:
    """Steady-state progress per second of one log, in the log's own unit (epochs or samples).

    1. Blocks: a block's work is the difference of running totals where the log counts
       cumulatively (strictly increasing across blocks), else the block's own count; blocks whose
       total does not track the evals' progress (within 2x) are not used. The median over the
       steady blocks (`_steady_blocks`: training-only, the first left out).
    2. Several evals per epoch (DLRM, GNN): progress from the first to the last eval over the time
       between them.
    3. Epoch markers (epoch-counted benchmarks; also where every block holds an evaluation): one
       epoch per epoch_start/epoch_stop pair, the first left out, if the pairs cover the training.
    4. Evals that count progress (BERT): as in 2, evals included.
    Otherwise NULL, with the reason.
    """
    benchmark = _LOGGED_ALIASES.get(benchmark, benchmark)
    field = eval_field(lines, benchmark)
    return _throughput(lines, benchmark, _eval_progress(lines, field), field)


def _throughput(lines: list[LogLine], benchmark: str | None, evals: list[tuple[float, float]],
                field: str | None) -> Throughput:
    """steady_state_throughput for a benchmark name already resolved, given its evals' progress
    (in `field`). A benchmark in no seed is read in the units its keys name (samples_count: samples,
    epoch_count/epoch_num: epochs)."""
    counts = counting(benchmark)
    blocks = _blocks(lines)
    work, block_counting, block_field = _block_work(blocks)
    block_unit = field_unit(block_field and ("samples_count" if block_field == "samples_count" else "epoch_num"),
                            benchmark, [_number(b.start_md.get(block_field)) for b in blocks] if block_field else [])
    eval_unit = field_unit(field, benchmark, [p for _, p in evals])
    sizes = counts.dataset_sizes

    def in_samples(amount: float, unit: str | None) -> float | None:
        if unit == "epochs":
            return amount * sizes[0] if len(sizes) == 1 else None
        return amount if unit in ("samples", "tokens") else None

    timed = [(w, (b.stop_ms - b.start_ms) / 1000.0) for w, b in zip(work, blocks, strict=False)]
    total = sum(w for w in work if w)
    if block_unit != eval_unit:  # compare in samples (unet3d logs with epochs in blocks, samples in evals)
        total, last_eval = in_samples(total, block_unit), in_samples(evals[-1][1], eval_unit) if evals else None
    else:
        last_eval = evals[-1][1] if evals else None
    tracks_evals = not evals or (total is not None and last_eval and 0.5 <= total / last_eval <= 2.0)
    steady, training_only = _steady_blocks(blocks, timed, _eval_times(lines))
    rate = _median_rate([(w, t) for w, t in steady if w and w > 0 and t > 0])
    epoch_rate = _epoch_marker_rate(lines) if counts.counts_epochs or counts.unit is None else None
    if block_counting and tracks_evals and rate is not None and (training_only or epoch_rate is None):
        return Throughput(rate, block_unit, block_counting, None, eval_unit)

    # progress between the first and the last eval over the time between them (evals included)
    eval_rate = None
    if len(evals) >= 2 and evals[-1][0] > evals[0][0] and evals[-1][1] > evals[0][1]:
        eval_rate = (evals[-1][1] - evals[0][1]) / ((evals[-1][0] - evals[0][0]) / 1000.0)
    evals_within_epochs = eval_unit == "epochs" and len(evals) >= 3 and evals[1][1] - evals[0][1] < 1
    if eval_rate is not None and evals_within_epochs:  # several evals per epoch: finer than epoch markers
        return Throughput(eval_rate, eval_unit, "eval_markers", None, eval_unit)

    if epoch_rate is not None:  # also where every block holds an evaluation: epochs are training only
        return Throughput(epoch_rate, "epochs", "epoch_markers", None, eval_unit)

    if eval_rate is not None:
        return Throughput(eval_rate, eval_unit, "eval_markers", None, eval_unit)

    if block_counting and not tracks_evals:
        reason = "block counts do not track the eval progress and fewer than 2 evals count progress"
    elif len(evals) < 2 and sum(line.key == "eval_accuracy" for line in lines) >= 2:
        reason = ("fewer than 2 usable training blocks, and the evals do not count progress "
                  "(the same or no epoch_num/samples_count/step_num at every eval)")
    elif blocks or evals:
        reason = "fewer than 2 usable training blocks, epochs or progress-counting evals"
    else:
        reason = "no training blocks, epochs or progress-counting evals in the log"
    return Throughput(None, None, None, reason, eval_unit)


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
        if key in _EVALS:
            md = _metadata(line)
            if field is not None and _number(md.get(field)) is not None:
                last["eval"] = _number(md.get(field))
                if benchmark == "stable_diffusion":
                    sd_evals.setdefault(last["eval"], {})[md.get("metric")] = _number(_value(line))
        elif key == "train_samples" and start is not None and line.time_ms >= start:
            value = _number(_value(line))
            if value is not None:
                last["train_samples"] = value
        elif key == "run_stop":
            if _metadata(line).get("status") != "success":
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
            return _number(_value(line))
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
            status = _metadata(line).get("status")
        elif key == "global_batch_size" and gbs is None:
            gbs = _number(_value(line))
        elif key == "seed" and seed is None:
            seed = _number(_value(line))
        elif key == "submission_benchmark" and benchmark is None:
            benchmark = _value(line)
        elif key == "number_of_nodes" and nodes is None:
            nodes = _number(_value(line))
        elif key == "accelerators_per_node" and per_node is None:
            per_node = _number(_value(line))
    logged = benchmark if isinstance(benchmark, str) else None
    resolved = _LOGGED_ALIASES.get(logged, logged)
    field = eval_field(lines, resolved)
    evals = _eval_progress(lines, field)
    throughput = _throughput(lines, resolved, evals, field)
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
