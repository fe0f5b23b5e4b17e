"""What one result log says about its run: timing, batch size, seed, convergence, throughput."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .mllog import LogLine

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
    steady_state_throughput: float | None
    throughput_unit: str | None


def _value(line: LogLine):
    v = line.value
    return v.get("value") if isinstance(v, dict) else v


def _metadata(line: LogLine) -> dict:
    v = line.value
    md = v.get("metadata") if isinstance(v, dict) else None
    return md if isinstance(md, dict) else {}


def _number(value) -> float | None:
    if isinstance(value, bool):  # float(True) is 1.0: a boolean is no batch size or sample count
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


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


def steady_state_throughput(lines: list[LogLine]) -> tuple[float | None, str | None]:
    """Median over training blocks (the first excluded) of units processed per second.

    Units are the block's `epoch_count` metadata (epochs, or samples/tokens in logs that count
    them that way), else `samples_count`; logs without blocks fall back to epochs.
    """
    for start_key, stop_key in (("block_start", "block_stop"), ("epoch_start", "epoch_stop")):
        rates, unit, open_start = [], None, None
        for line in lines:
            if line.key == start_key:
                open_start = line
            elif line.key == stop_key and open_start is not None:
                md = _metadata(open_start)
                if start_key == "epoch_start":
                    amount, this_unit = 1.0, "epochs"
                elif _number(md.get("epoch_count")) is not None:
                    amount, this_unit = _number(md.get("epoch_count")), "epoch_count"
                elif _number(md.get("samples_count")) is not None:
                    amount, this_unit = _number(md.get("samples_count")), "samples"
                else:
                    amount, this_unit = None, None
                seconds = (line.time_ms - open_start.time_ms) / 1000.0
                # one unit per run: blocks counted in another unit than the first are not comparable
                if amount is not None and seconds > 0 and unit in (None, this_unit):
                    rates.append(amount / seconds)
                    unit = this_unit
                open_start = None
        if len(rates) >= 2:
            return statistics.median(rates[1:]), f"{unit}/s"
    return None, None


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


def run_facts(lines: list[LogLine]) -> RunFacts:
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
    throughput, unit = steady_state_throughput(lines)
    return RunFacts(
        run_start_ms=start,
        run_stop_ms=stop,
        status=str(status) if status is not None else None,
        global_batch_size=gbs,
        seed=seed,
        samples_to_converge=_samples_to_converge(lines, benchmark if isinstance(benchmark, str) else None),
        benchmark_logged=benchmark if isinstance(benchmark, str) else None,
        steady_state_throughput=throughput,
        throughput_unit=unit,
    )
