"""How one result log counts its progress: the unit of each progress field, and the log's evaluations over time.

Progress is read in the unit the log counts it in and said so; SQL converts every unit to samples:
- `samples`: the benchmark's own samples (images, sequences, volumes, ...), logged as `samples_count`,
  or as `epoch_num` by BERT and the v1.0-era NLP logs;
- `tokens`: GPT-3 counts tokens in `epoch_num` (a sample is a 2,048-token sequence);
- `epochs`: passes over the training set (`epoch_num`), converted with the run's samples per epoch;
- `steps`: optimizer steps (`step_num`, Stable Diffusion in v3.1), converted with the global batch.
The unit of each benchmark comes from `benchmarks.csv` (`convergence_unit`); a benchmark it lacks is read
from the keys its log uses. The throughput read in these units: `run_throughput.py`; the run's facts: `runs.py`.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass

from pipelines.lib.io.numbers import number_or_none as _number
from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.reference.seeds import BENCHMARK_DATASETS_CSV, BENCHMARKS_CSV

PROGRESS_UNITS = ("samples", "tokens", "epochs", "steps")  # the units a log counts progress in


def line_value(line: LogLine):
    """What a log line states: the `value` of its JSON object (the object itself when it is not a dict)."""
    v = line.value
    return v.get("value") if isinstance(v, dict) else v


def line_metadata(line: LogLine) -> dict:
    """The `metadata` of a log line's JSON object ({} when it has none)."""
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
LOGGED_ALIASES = {"mask": "maskrcnn"}


EVAL_KEYS = ("eval_accuracy", "eval_error")
_PROGRESS_FIELDS = ("samples_count", "epoch_num", "step_num")


def eval_field(lines: list[LogLine], benchmark: str | None) -> str | None:
    """The metadata key the log's evals count progress in: an epoch-counted benchmark's `epoch_num`
    first, a sample-counted one's `samples_count` first (several logs carry both), `step_num` last."""
    present = set()
    for line in lines:
        if line.key in EVAL_KEYS:
            md = line_metadata(line)
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


def eval_progress(lines: list[LogLine], field: str | None) -> list[tuple[float, float]]:
    """(time, progress) at each eval during the run, in the log's progress field; one point per
    progress value. Evals logged after run_stop (offline evaluation) carry no training time."""
    if field is None:
        return []
    start, stop = run_start_stop(lines)
    points: dict[float, float] = {}
    for line in lines:
        if line.key in EVAL_KEYS:
            progress = _number(line_metadata(line).get(field))
            in_run = (start is None or line.time_ms >= start) and (stop is None or line.time_ms <= stop)
            if progress is not None and progress > 0 and in_run:
                points.setdefault(progress, line.time_ms)
    return sorted((t, p) for p, t in points.items())


def progress_offset(lines: list[LogLine], evals: list[tuple[float, float]]) -> float:
    """Where the log's epoch counter starts: 1 in logs that number the first epoch 1 and log the
    evals inside it as 1.05, 1.10... (DLRM v1.0/v2.1), else 0. Subtract it from eval progress."""
    first_epoch = next((_number(line_metadata(line).get("epoch_num")) for line in lines if line.key == "epoch_start"), None)
    if first_epoch and evals and first_epoch < evals[0][1] < first_epoch + 1:
        return first_epoch
    return 0.0
