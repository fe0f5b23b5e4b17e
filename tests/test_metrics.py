"""Each metric on small hand-made inputs; every expected answer is worked out by hand in a comment."""

from __future__ import annotations

import pytest

from pipelines.lib import metrics
from pipelines.lib.metrics import FamilyMember
from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.mlperf.runs import steady_state_throughput


def line(key: str, time_ms: float, value=None, **metadata) -> LogLine:
    return LogLine(f":::MLLOG {key}", time_ms, key, {"value": value, "metadata": metadata}, 0, time_ms)


# --- steady-state throughput ---------------------------------------------------------------------

def test_steady_state_throughput_median_of_blocks_after_the_first():
    lines = [
        line("run_start", 0),
        # block 1: 10 units in 10 s = 1.0/s (excluded: warm-up)
        line("block_start", 0, epoch_count=10), line("block_stop", 10_000),
        # block 2: 10 units in 5 s = 2.0/s
        line("block_start", 10_000, epoch_count=10), line("block_stop", 15_000),
        # block 3: 10 units in 4 s = 2.5/s
        line("block_start", 15_000, epoch_count=10), line("block_stop", 19_000),
        # block 4: 8 units in 4 s = 2.0/s
        line("block_start", 19_000, epoch_count=8), line("block_stop", 23_000),
        line("run_stop", 23_000, status="success"),
    ]
    # median(2.0, 2.5, 2.0) = 2.0
    assert steady_state_throughput(lines) == (pytest.approx(2.0), "epoch_count/s")


def test_steady_state_throughput_falls_back_to_epochs():
    lines = []
    t = 0
    for seconds in (100, 50, 40, 25):  # 1 epoch each: 0.01, 0.02, 0.025, 0.04 epochs/s
        lines += [line("epoch_start", t), line("epoch_stop", t + seconds * 1000)]
        t += seconds * 1000
    # first excluded → median(0.02, 0.025, 0.04) = 0.025
    value, unit = steady_state_throughput(lines)
    assert value == pytest.approx(0.025) and unit == "epochs/s"


def test_steady_state_throughput_samples_count_and_no_usable_blocks():
    lines = [
        line("block_start", 0, samples_count=1000), line("block_stop", 1000),     # 1000/s (excluded)
        line("block_start", 1000, samples_count=3000), line("block_stop", 3000),  # 1500/s
    ]
    assert steady_state_throughput(lines) == (pytest.approx(1500.0), "samples/s")
    # one block only, or blocks without any amount → NULL
    assert steady_state_throughput(lines[:2]) == (None, None)
    assert steady_state_throughput([line("block_start", 0), line("block_stop", 5), line("block_start", 5),
                                    line("block_stop", 9)]) == (None, None)


def test_steady_state_throughput_keeps_one_unit():
    lines = [
        line("block_start", 0, epoch_count=2), line("block_stop", 2000),        # 1.0/s, excluded
        line("block_start", 2000, epoch_count=3), line("block_stop", 3000),     # 3.0/s
        line("block_start", 3000, samples_count=500), line("block_stop", 4000),  # samples: other unit, skipped
        line("block_start", 4000, epoch_count=5), line("block_stop", 5000),     # 5.0/s
    ]
    # median(3.0, 5.0) = 4.0 epoch_count/s
    assert steady_state_throughput(lines) == (pytest.approx(4.0), "epoch_count/s")


# --- scaling ---------------------------------------------------------------------------------------

def test_convergence_scaling_efficiency():
    # base: 64 chips, 100 min; scaled: 256 chips, 30 min → speedup 100/30 = 3.333..., size ratio 4
    # efficiency = 3.333.../4 = 0.8333...
    assert metrics.speedup(100, 30) == pytest.approx(10 / 3)
    assert metrics.size_ratio(64, 256) == 4
    assert metrics.convergence_scaling_efficiency(100, 64, 30, 256) == pytest.approx(5 / 6)
    # perfectly linear: 8 → 16 chips, 40 → 20 min → 1.0
    assert metrics.convergence_scaling_efficiency(40, 8, 20, 16) == pytest.approx(1.0)


def test_weak_scaling_efficiency():
    # base: 1,000 samples/s on 512 chips; 3,600 samples/s on 2,048 chips → 3.6× for 4× chips = 0.9
    assert metrics.relative_throughput(1000, 3600) == pytest.approx(3.6)
    assert metrics.weak_scaling_efficiency(1000, 512, 3600, 2048) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        metrics.weak_scaling_efficiency(0, 512, 3600, 2048)


def test_family_base_is_smallest_then_fastest_then_name():
    family = [
        FamilyMember("sys_c_1024", 1024, 12.0, 4000.0),
        FamilyMember("sys_b_256", 256, 40.0, 1100.0),
        FamilyMember("sys_a_256", 256, 40.0, 1000.0),  # same count and score as b: name decides → a
        FamilyMember("sys_d_256", 256, 45.0, 1000.0),  # slower at the same size: not the base
    ]
    assert metrics.pick_base(family).system == "sys_a_256"
    rows = {r.system: r for r in metrics.family_scaling(family)}
    assert rows["sys_a_256"].convergence_scaling_efficiency == 1.0
    assert rows["sys_a_256"].weak_scaling_efficiency == 1.0
    # c vs a: speedup 40/12 = 3.333..., ratio 4 → 0.8333...; throughput 4000/1000 / 4 = 1.0
    assert rows["sys_c_1024"].speedup == pytest.approx(10 / 3)
    assert rows["sys_c_1024"].convergence_scaling_efficiency == pytest.approx(5 / 6)
    assert rows["sys_c_1024"].weak_scaling_efficiency == pytest.approx(1.0)
    # d vs a: same size, 40/45 = 0.888...
    assert rows["sys_d_256"].convergence_scaling_efficiency == pytest.approx(8 / 9)


# --- cost -----------------------------------------------------------------------------------------

def test_cost_to_train():
    # 90 min = 1.5 h × 512 chips × $2.00 = $1,536
    assert metrics.cost_to_train(90, 512, 2.0) == pytest.approx(1536.0)
    # 3.4 min on 11,616 GPUs at $4.50: 3.4/60 × 11,616 × 4.5 = 2,962.08
    assert metrics.cost_to_train(3.4, 11616, 4.5) == pytest.approx(2962.08)
    # cost scales linearly with accelerator count and with price
    assert metrics.cost_to_train(90, 1024, 2.0) == pytest.approx(2 * 1536.0)
    assert metrics.cost_to_train(90, 512, 3.0) == pytest.approx(1.5 * 1536.0)


def test_perf_per_dollar_and_ratio():
    assert metrics.perf_per_dollar(1536.0) == pytest.approx(1 / 1536)
    # A costs $1,000 per training, B $1,800 → a dollar buys 1.8× more training on A
    assert metrics.perf_per_dollar_ratio(1000.0, 1800.0) == pytest.approx(1.8)


def test_native_cloud():
    assert metrics.is_native_cloud("Google", "gcp")
    assert metrics.is_native_cloud("Microsoft Azure", "azure")
    assert metrics.is_native_cloud("Oracle", "oci")
    assert metrics.is_native_cloud("Amazon", "aws") and metrics.is_native_cloud("AWS", "aws")
    assert metrics.is_native_cloud("CoreWeave", "coreweave")
    assert not metrics.is_native_cloud("NVIDIA", "gcp")
    assert not metrics.is_native_cloud("Google", "aws")


# --- MFU ------------------------------------------------------------------------------------------

def test_model_flops_per_sample():
    # GPT-3: 6 × 175e9 × 2048 = 2.1504e15
    assert metrics.model_flops_per_sample(175e9, 2048) == pytest.approx(2.1504e15)


def test_mfu():
    # 1,000 samples × 1e15 FLOPs = 1e18 FLOPs; 2 min = 120 s × 20 chips × 1e15 FLOP/s = 2.4e18
    # → 1e18 / 2.4e18 = 5/12
    assert metrics.mfu(1000, 1e15, 2.0, 20, 1e15) == pytest.approx(5 / 12)
    # GPT-3 style: 1.2e9 tokens × 1.05e12 FLOPs/token = 1.26e21; 3 min × 10,000 × 1e15 = 1.8e21 → 0.7
    assert metrics.mfu(1.2e9, 6 * 175e9, 3.0, 10_000, 1e15) == pytest.approx(0.7)
    with pytest.raises(ValueError):
        metrics.mfu(1000, 1e15, 0, 20, 1e15)
