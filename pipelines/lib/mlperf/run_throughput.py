"""The steady-state throughput of one result log: progress per second, in the unit the log counts progress in.

Read from the log's training blocks, else its evaluations or epoch markers (`steady_state_throughput` says in which
order); the units and the evaluations' progress: `run_progress.py`. The run's other facts: `runs.py`.
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from dataclasses import dataclass

from pipelines.lib.io.numbers import number_or_none as _number
from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.mlperf.run_progress import (
    LOGGED_ALIASES,
    counting,
    eval_field,
    eval_progress,
    field_unit,
    line_metadata,
)


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
            first = line_metadata(line).get("first_epoch_num")
            match = next((s for s in reversed(open_starts) if first is not None
                          and line_metadata(s).get("first_epoch_num") == first), open_starts[-1])
            open_starts.remove(match)
            # a start left open by a later start never closes: drop the older ones
            open_starts = [s for s in open_starts if s.time_ms >= match.time_ms]
            block = _Block(match.time_ms, line.time_ms, line_metadata(match), line_metadata(line))
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
    benchmark = LOGGED_ALIASES.get(benchmark, benchmark)
    field = eval_field(lines, benchmark)
    return throughput_given_evals(lines, benchmark, eval_progress(lines, field), field)


def throughput_given_evals(lines: list[LogLine], benchmark: str | None, evals: list[tuple[float, float]],
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
