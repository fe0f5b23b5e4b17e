"""What one result log says about its run: timing, batch size, seed, convergence, throughput."""

from __future__ import annotations

import csv
import functools
import statistics
from bisect import bisect_right
from dataclasses import dataclass

from pipelines.lib.io.numbers import number_or_none as _number
from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.reference.seeds import BENCHMARKS_CSV

# Benchmarks whose convergence point is counted in samples (`samples_count`), as the RCP checker does.
_SAMPLE_COUNTED = {
    "llama2_70b_lora", "flux1", "llama31_405b", "llama31_8b", "gpt_oss_20b",
    "deepseekv3_671b", "qwen35_397b_grpo", "dlrmv4",
}


@dataclass
class RunFacts:
    run_start_ms: float | None
    run_stop_ms: float | None
    status: str | None  # run_stop's metadata status ("success", "aborted", ...)
    global_batch_size: float | None
    seed: float | None
    samples_to_converge: float | None
    benchmark_logged: str | None
    steady_state_throughput: float | None  # in `throughput_unit`: the log's own progress unit per second
    throughput_unit: str | None  # "epochs/s" or "samples/s"; SQL converts to the benchmark's unit
    throughput_counting: str | None = None  # running_total, block_count, epoch_markers, eval_markers
    progress_counted_in: str | None = None  # the unit of this log's progress counters (and samples_to_converge)
    throughput_null_reason: str | None = None
    progress_offset: float = 0.0  # the log's epoch counter at the start of training (1 in some DLRM logs)


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


# How a log's progress is read, per benchmark, from benchmarks.csv: the unit its convergence point
# is counted in ("epochs" or a sample unit) and how many samples one epoch is (to detect logs that
# count epochs in samples). Read here only to classify logs; SQL converts epochs to samples.
_BENCHMARKS_CSV = BENCHMARKS_CSV


@functools.cache
def _benchmark_counting() -> dict[str, tuple[str, float | None]]:
    with _BENCHMARKS_CSV.open(newline="") as fh:
        return {
            row["benchmark"].strip(): (row["convergence_unit"].strip(), _number(row.get("dataset_size")))
            for row in csv.DictReader(fh)
        }


# the v0.6 Mask R-CNN logs name their benchmark "mask"
_LOGGED_ALIASES = {"mask": "maskrcnn"}


@dataclass(frozen=True)
class Throughput:
    """Steady-state progress per second of one log.

    `per_second` is in `counted_in` units: "epochs", or "samples" (the benchmark's own sample unit:
    tokens for gpt3, sequences for the LLMs and BERT, images...). `counting` says how a block's work
    was read; `null_reason` says why there is no figure."""

    per_second: float | None
    counted_in: str | None
    counting: str | None
    null_reason: str | None = None
    evals_counted_in: str | None = None  # the unit of the evals' progress (and of samples_to_converge)


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
    rising = all(b > a for a, b in zip(values, values[1:]))
    return len(values) >= 2 and rising and (values[0] == 0 or len(values) >= 3)


def _block_work(blocks: list[_Block]) -> tuple[list[float | None], str | None]:
    """Work of each block in the log's progress unit, and the counting style detected."""
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
            return work, "running_total"
        return starts, "block_count"
    return [None] * len(blocks), None


def _progress_field(benchmark: str | None) -> str:
    return "samples_count" if benchmark in _SAMPLE_COUNTED or benchmark == "stable_diffusion" else "epoch_num"


def _eval_progress(lines: list[LogLine], benchmark: str | None) -> list[tuple[float, float]]:
    """(time, progress) at each eval during the run, in the log's progress counter; one point per
    progress value. Evals logged after run_stop (offline evaluation) carry no training time."""
    field = _progress_field(benchmark)
    start, stop = run_start_stop(lines)
    points: dict[float, float] = {}
    for line in lines:
        if line.key in ("eval_accuracy", "eval_error"):
            progress = _number(_metadata(line).get(field))
            in_run = (start is None or line.time_ms >= start) and (stop is None or line.time_ms <= stop)
            if progress is not None and progress > 0 and in_run:
                points.setdefault(progress, line.time_ms)
    return sorted((t, p) for p, t in points.items())


def progress_offset(lines: list[LogLine], evals: list[tuple[float, float]]) -> float:
    """Where the log's epoch counter starts: 1 in logs that number the first epoch 1 and log the
    evals inside it as 1.05, 1.10... (DLRM v1.0/v2.1), else 0. Subtract it from eval progress."""
    first_epoch = next((_number(_metadata(l).get("epoch_num")) for l in lines if l.key == "epoch_start"), None)
    if first_epoch and evals and first_epoch < evals[0][1] < first_epoch + 1:
        return first_epoch
    return 0.0


def _counted_in(values: list[float | None], counts_epochs: bool, samples_per_epoch: float | None) -> str:
    """"epochs" for an epoch-counted benchmark, unless every count is a whole number of datasets:
    then the log counts epochs in samples (some unet3d logs, for blocks or evals or both)."""
    if not counts_epochs:
        return "samples"
    values = [v for v in values if v]
    in_samples = bool(values) and samples_per_epoch is not None and samples_per_epoch > 1 and all(
        v >= samples_per_epoch and (v / samples_per_epoch).is_integer() for v in values)
    return "samples" if in_samples else "epochs"


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
    return _throughput(lines, benchmark, _eval_progress(lines, benchmark))


def _throughput(lines: list[LogLine], benchmark: str | None, evals: list[tuple[float, float]]) -> Throughput:
    """steady_state_throughput for a benchmark name already resolved, given its evals' progress."""
    convergence_unit, samples_per_epoch = _benchmark_counting().get(benchmark or "", (None, None))
    if convergence_unit is None:  # its unit is unknown: no figure rather than one in an unknown unit
        return Throughput(None, None, None, f"benchmark {benchmark!r} (submission_benchmark) is not in benchmarks.csv")
    counts_epochs = convergence_unit == "epochs"
    blocks = _blocks(lines)
    block_unit = _counted_in([_number(b.start_md.get("epoch_count")) for b in blocks], counts_epochs, samples_per_epoch)
    eval_unit = _counted_in([p for _, p in evals], counts_epochs, samples_per_epoch)
    evals_in = eval_unit

    def in_samples(amount: float, unit: str) -> float | None:
        return amount * samples_per_epoch if unit == "epochs" and samples_per_epoch else (
            amount if unit == "samples" else None)

    work, counting = _block_work(blocks)
    timed = [(w, (b.stop_ms - b.start_ms) / 1000.0) for w, b in zip(work, blocks)]
    total = sum(w for w in work if w)
    if block_unit != eval_unit:  # compare in samples (unet3d logs with epochs in blocks, samples in evals)
        total, last_eval = in_samples(total, block_unit), in_samples(evals[-1][1], eval_unit) if evals else None
    else:
        last_eval = evals[-1][1] if evals else None
    tracks_evals = not evals or (total is not None and last_eval and 0.5 <= total / last_eval <= 2.0)
    steady, training_only = _steady_blocks(blocks, timed, _eval_times(lines))
    rate = _median_rate([(w, t) for w, t in steady if w and w > 0 and t > 0])
    epoch_rate = _epoch_marker_rate(lines) if counts_epochs else None
    if counting and tracks_evals and rate is not None and (training_only or epoch_rate is None):
        return Throughput(rate, block_unit, counting, None, evals_in)

    # progress between the first and the last eval over the time between them (evals included)
    eval_rate = None
    if len(evals) >= 2 and evals[-1][0] > evals[0][0] and evals[-1][1] > evals[0][1]:
        eval_rate = (evals[-1][1] - evals[0][1]) / ((evals[-1][0] - evals[0][0]) / 1000.0)
    evals_within_epochs = eval_unit == "epochs" and len(evals) >= 3 and evals[1][1] - evals[0][1] < 1
    if eval_rate is not None and evals_within_epochs:  # several evals per epoch: finer than epoch markers
        return Throughput(eval_rate, evals_in, "eval_markers", None, evals_in)

    if epoch_rate is not None:  # also where every block holds an evaluation: epochs are training only
        return Throughput(epoch_rate, "epochs", "epoch_markers", None, evals_in)

    if eval_rate is not None:
        return Throughput(eval_rate, evals_in, "eval_markers", None, evals_in)

    if counting and not tracks_evals:
        reason = "block counts do not track the eval progress and fewer than 2 evals count progress"
    elif len(evals) < 2 and sum(line.key == "eval_accuracy" for line in lines) >= 2:
        reason = ("fewer than 2 usable training blocks, and the evals do not count progress "
                  "(the same or no epoch_num/samples_count at every eval)")
    elif blocks or evals:
        reason = "fewer than 2 usable training blocks, epochs or progress-counting evals"
    else:
        reason = "no training blocks, epochs or progress-counting evals in the log"
    return Throughput(None, None, None, reason, evals_in)


def _samples_to_converge(lines: list[LogLine], benchmark: str | None) -> float | None:
    """The RCP checker's convergence point: the last eval before a successful run_stop."""
    conv = None
    sd_evals: dict[float, dict] = {}
    for line in lines:
        key = line.key
        if key in ("eval_accuracy", "eval_error"):
            md = _metadata(line)
            if benchmark == "stable_diffusion":
                step = md.get("samples_count", md.get("step_num"))
                sd_evals.setdefault(step, {})[md.get("metric")] = _value(line)
            elif benchmark in _SAMPLE_COUNTED:
                conv = _number(md.get("samples_count"))
            else:
                epoch = _number(md.get("epoch_num"))
                conv = round(epoch, 3) if epoch is not None else None
        elif key == "run_stop":
            if _metadata(line).get("status") != "success":
                return None
            if benchmark == "stable_diffusion":
                passing = [
                    s for s, r in sd_evals.items()
                    if _number(r.get("FID")) is not None and _number(r.get("CLIP")) is not None
                    and r["FID"] <= 90.0 and r["CLIP"] >= 0.15
                ]
                return _number(min(passing)) if passing else None
            return conv
    return None


# Every key the facts below are read from. run_facts works on these lines only (in log order): the
# rest of a log (per-step stats, weight initialization, one init_start per rank) is most of it.
_FACT_KEYS = frozenset({
    "run_start", "run_stop", "global_batch_size", "seed", "submission_benchmark", "block_start",
    "block_stop", "eval_accuracy", "eval_error", "eval_start", "epoch_start", "epoch_stop",
})


def run_facts(lines: list[LogLine]) -> RunFacts:
    lines = [line for line in lines if type(line.key) is str and line.key in _FACT_KEYS]
    start, stop = run_start_stop(lines)
    status = gbs = seed = benchmark = None
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
    logged = benchmark if isinstance(benchmark, str) else None
    resolved = _LOGGED_ALIASES.get(logged, logged)
    evals = _eval_progress(lines, resolved)
    throughput = _throughput(lines, resolved, evals)
    if _progress_field(logged) != _progress_field(resolved):
        evals = _eval_progress(lines, logged)
    return RunFacts(
        run_start_ms=start,
        run_stop_ms=stop,
        status=str(status) if status is not None else None,
        global_batch_size=gbs,
        seed=seed,
        samples_to_converge=_samples_to_converge(lines, benchmark if isinstance(benchmark, str) else None),
        benchmark_logged=benchmark if isinstance(benchmark, str) else None,
        steady_state_throughput=throughput.per_second,
        throughput_unit=f"{throughput.counted_in}/s" if throughput.per_second is not None else None,
        throughput_counting=throughput.counting,
        progress_counted_in=throughput.evals_counted_in,
        throughput_null_reason=throughput.null_reason,
        progress_offset=progress_offset(lines, evals),
    )

