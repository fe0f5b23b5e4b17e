"""The scaling, cost and utilization metrics, as plain functions.

The SQL marts (`sql/marts/mart_*.sql`) compute the same definitions over the whole warehouse; these
functions are the reference the unit tests pin down by hand and the `compare` command uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence


def _positive(name: str, value: float) -> float:
    if value is None or not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return float(value)


def size_ratio(base_count: int, count: int) -> float:
    """N1 / N0."""
    return _positive("count", count) / _positive("base_count", base_count)


def speedup(base_minutes: float, minutes: float) -> float:
    """How many times faster the scaled system trains: time-to-train at N0 / at N1."""
    return _positive("base_minutes", base_minutes) / _positive("minutes", minutes)


def convergence_scaling_efficiency(base_minutes: float, base_count: int, minutes: float, count: int) -> float:
    """(time-to-train at N0 / at N1) / (N1 / N0), from the official scores."""
    return speedup(base_minutes, minutes) / size_ratio(base_count, count)


def relative_throughput(base_throughput: float, throughput: float) -> float:
    return _positive("throughput", throughput) / _positive("base_throughput", base_throughput)


def weak_scaling_efficiency(base_throughput: float, base_count: int, throughput: float, count: int) -> float:
    """(mean steady-state throughput at N1 / at N0) / (N1 / N0)."""
    return relative_throughput(base_throughput, throughput) / size_ratio(base_count, count)


def cost_to_train(score_minutes: float, accelerator_count: int, price_per_accelerator_hour_usd: float) -> float:
    """Score in hours × accelerator count × price per accelerator-hour (USD)."""
    return (
        _positive("score_minutes", score_minutes) / 60.0
        * _positive("accelerator_count", accelerator_count)
        * _positive("price_per_accelerator_hour_usd", price_per_accelerator_hour_usd)
    )


def perf_per_dollar(cost_usd: float) -> float:
    """Trainings per USD: the inverse of the cost to train."""
    return 1.0 / _positive("cost_usd", cost_usd)


def perf_per_dollar_ratio(cost_a_usd: float, cost_b_usd: float) -> float:
    """How many times more training a dollar buys on A than on B (= cost B / cost A)."""
    return perf_per_dollar(cost_a_usd) / perf_per_dollar(cost_b_usd)


def model_flops_per_sample(parameters: float, tokens_per_sample: float, flops_per_param_token: float = 6.0) -> float:
    """Training FLOPs of one sample: k × parameters × tokens (k = 6 for forward + backward)."""
    return flops_per_param_token * parameters * tokens_per_sample


def mfu(
    samples_to_converge: float,
    flops_per_sample: float,
    time_to_train_minutes: float,
    accelerator_count: int,
    peak_flops_per_accelerator: float,
) -> float:
    """samples × FLOPs per sample / (time-to-train seconds × accelerators × peak FLOP/s)."""
    achieved = _positive("samples_to_converge", samples_to_converge) * _positive("flops_per_sample", flops_per_sample)
    available = (
        _positive("time_to_train_minutes", time_to_train_minutes) * 60.0
        * _positive("accelerator_count", accelerator_count)
        * _positive("peak_flops_per_accelerator", peak_flops_per_accelerator)
    )
    return achieved / available


# The native-cloud rule has one definition: pipelines/lib/prices/cloud_providers.csv (also the seed
# mart_cost_to_train reads), applied by pipelines.lib.prices.clouds.
from pipelines.lib.prices.clouds import is_native_cloud  # noqa: E402,F401


@dataclass(frozen=True)
class FamilyMember:
    system: str
    accelerator_count: int
    score_minutes: float
    throughput: float | None = None


def pick_base(members: Iterable[FamilyMember]) -> FamilyMember:
    """The family's base: smallest accelerator count; ties → lowest score, then system name."""
    members = list(members)
    if not members:
        raise ValueError("empty scaling family")
    return min(members, key=lambda m: (m.accelerator_count, m.score_minutes, m.system))


@dataclass(frozen=True)
class ScalingRow:
    system: str
    base_system: str
    size_ratio: float
    speedup: float
    convergence_scaling_efficiency: float
    weak_scaling_efficiency: float | None


def family_scaling(members: Sequence[FamilyMember]) -> list[ScalingRow]:
    """Every member of one scaling family against the family's base (as mart_scaling_efficiency)."""
    base = pick_base(members)
    rows = []
    for m in sorted(members, key=lambda m: (m.accelerator_count, m.score_minutes, m.system)):
        weak = None
        if m.throughput and base.throughput:
            weak = weak_scaling_efficiency(base.throughput, base.accelerator_count, m.throughput, m.accelerator_count)
        rows.append(ScalingRow(
            system=m.system,
            base_system=base.system,
            size_ratio=size_ratio(base.accelerator_count, m.accelerator_count),
            speedup=speedup(base.score_minutes, m.score_minutes),
            convergence_scaling_efficiency=convergence_scaling_efficiency(
                base.score_minutes, base.accelerator_count, m.score_minutes, m.accelerator_count
            ),
            weak_scaling_efficiency=weak,
        ))
    return rows
