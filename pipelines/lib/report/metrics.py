"""The scaling, cost and utilization metrics, as plain functions.

The SQL marts (`sql/marts/mart_*.sql`) compute the same definitions over the whole warehouse; these
functions are the reference the unit tests pin down by hand and the `compare` command uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipelines.lib.warehouse.query import fetch_dicts


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


def throughput_scaling_efficiency(base_throughput: float, base_count: int, throughput: float, count: int) -> float:
    """(mean steady-state throughput at N1 / at N0) / (N1 / N0): for every kind of pair; it is the weak
    scaling efficiency when the global batch grows with the system (`scaling_kind` weak)."""
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


@dataclass(frozen=True)
class FamilyMember:
    system: str
    accelerator_count: int
    score_minutes: float
    throughput: float | None = None
    global_batch_size: float | None = None


def pick_base(members: Iterable[FamilyMember]) -> FamilyMember:
    """The family's base: smallest accelerator count; ties → lowest score, then system name."""
    members = list(members)
    if not members:
        raise ValueError("empty scaling family")
    return min(members, key=lambda m: (m.accelerator_count, m.score_minutes, m.system))


def scaling_kind(base_batch: float | None, batch: float | None, ratio: float) -> str | None:
    """weak: the global batch grows at least 0.9× as much as the accelerator count (`ratio`);
    strong: it stays within 10 % of the base's; mixed: anything else (vocabulary `scaling_kind`)."""
    if base_batch is None or batch is None:
        return None
    growth = batch / base_batch
    return "weak" if growth >= 0.9 * ratio else "strong" if abs(growth - 1) <= 0.1 else "mixed"


@dataclass(frozen=True)
class ScalingRow:
    system: str
    base_system: str
    size_ratio: float
    is_scaling_pair: bool
    speedup: float | None
    convergence_scaling_efficiency: float | None
    throughput_scaling_efficiency: float | None
    scaling_kind: str | None = None

    @property
    def weak_scaling_efficiency(self) -> float | None:
        """The throughput efficiency of a weak pair (or the base's own 1); None otherwise."""
        return self.throughput_scaling_efficiency if self.scaling_kind == "weak" or not self.is_scaling_pair else None


def family_scaling(members: Sequence[FamilyMember]) -> list[ScalingRow]:
    """Every member of one scaling family against the family's base (as mart_scaling_efficiency).

    Members of the base's size other than the base are not scaling rows: no speedup or efficiency."""
    base = pick_base(members)
    rows = []
    for m in sorted(members, key=lambda m: (m.accelerator_count, m.score_minutes, m.system)):
        pair = m.accelerator_count != base.accelerator_count
        measured = pair or m is base
        by_throughput = None
        if measured and m.throughput and base.throughput:
            by_throughput = throughput_scaling_efficiency(base.throughput, base.accelerator_count, m.throughput,
                                                          m.accelerator_count)
        rows.append(ScalingRow(
            system=m.system,
            base_system=base.system,
            size_ratio=size_ratio(base.accelerator_count, m.accelerator_count),
            is_scaling_pair=pair,
            speedup=speedup(base.score_minutes, m.score_minutes) if measured else None,
            convergence_scaling_efficiency=convergence_scaling_efficiency(
                base.score_minutes, base.accelerator_count, m.score_minutes, m.accelerator_count
            ) if measured else None,
            throughput_scaling_efficiency=by_throughput,
            scaling_kind=scaling_kind(base.global_batch_size, m.global_batch_size,
                                      size_ratio(base.accelerator_count, m.accelerator_count)) if pair else None,
        ))
    return rows


# ---- Checks that name the offending rows -------------------------------------------------------
# Each finder returns one dict per offending row (round, submitter, system, benchmark, value, ...);
# `describe` turns them into a line a person can read. The Dagster checks wrap these.

WEAK_EFFICIENCY_BAND = (0.30, 1.10)


def scaling_findings(con) -> list[dict]:
    """Scaling rows outside the sensible range: convergence efficiency outside (0, 1.5] or throughput
    efficiency outside WEAK_EFFICIENCY_BAND (each with the mart's stated cause, if any)."""
    lo, hi = WEAK_EFFICIENCY_BAND
    return fetch_dicts(con, """
        select round, submitter, system, benchmark,
            round(coalesce(case when throughput_scaling_efficiency not between ? and ?
                                then throughput_scaling_efficiency end,
                           convergence_scaling_efficiency), 3) as value,
            case when throughput_scaling_efficiency not between ? and ? then 'throughput' else 'convergence' end
                as measure,
            weak_scaling_flag as cause
        from mart_scaling_efficiency
        where convergence_scaling_efficiency not between 1e-9 and 1.5
            or throughput_scaling_efficiency not between ? and ?
        order by round, benchmark, submitter, system""", [lo, hi, lo, hi, lo, hi])


def describe(title: str, rows: list[dict], limit: int = 8) -> str:
    """`title: N — round submitter system benchmark = value (extra); ...` for a person to read."""
    if not rows:
        return f"{title}: none"
    shown = []
    for r in rows[:limit]:
        who = " ".join(str(r[k]) for k in ("round", "submitter", "system", "benchmark") if r.get(k) is not None)
        # a value that begins with its key as a word ("cause unknown: ...") is not prefixed with it again
        extra = [str(r[k]) if str(r[k]).startswith(f"{k} ") else f"{k} {r[k]}" for k in r
                 if k not in ("round", "submitter", "system", "benchmark", "value") and r[k] is not None]
        shown.append(f"{who} = {r.get('value')}" + (f" ({', '.join(extra)})" if extra else ""))
    more = f"; and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"{title}: {len(rows)} — " + "; ".join(shown) + more
