"""Each metric on small hand-made inputs; every expected answer is worked out by hand in a comment."""

from __future__ import annotations

import pytest

from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.mlperf.run_throughput import steady_state_throughput
from pipelines.lib.mlperf.runs import run_facts
from pipelines.lib.report import metrics
from pipelines.lib.report.metrics import FamilyMember


def line(key: str, time_ms: float, value=None, **metadata) -> LogLine:
    return LogLine(f":::MLLOG {key}", time_ms, key, {"value": value, "metadata": metadata}, 0, time_ms)


# --- scaling ---------------------------------------------------------------------------------------

def test_convergence_scaling_efficiency():
    # base: 64 chips, 100 min; scaled: 256 chips, 30 min → speedup 100/30 = 3.333..., size ratio 4
    # efficiency = 3.333.../4 = 0.8333...
    assert metrics.speedup(100, 30) == pytest.approx(10 / 3)
    assert metrics.size_ratio(64, 256) == 4
    assert metrics.convergence_scaling_efficiency(100, 64, 30, 256) == pytest.approx(5 / 6)
    # perfectly linear: 8 → 16 chips, 40 → 20 min → 1.0
    assert metrics.convergence_scaling_efficiency(40, 8, 20, 16) == pytest.approx(1.0)


def test_throughput_scaling_efficiency():
    # base: 1,000 samples/s on 512 chips; 3,600 samples/s on 2,048 chips → 3.6× for 4× chips = 0.9
    assert metrics.relative_throughput(1000, 3600) == pytest.approx(3.6)
    assert metrics.throughput_scaling_efficiency(1000, 512, 3600, 2048) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        metrics.throughput_scaling_efficiency(0, 512, 3600, 2048)


def test_family_base_is_smallest_then_fastest_then_name():
    family = [
        FamilyMember("sys_c_1024", 1024, 12.0, 4000.0, 4096),
        FamilyMember("sys_b_256", 256, 40.0, 1100.0, 1024),
        FamilyMember("sys_a_256", 256, 40.0, 1000.0, 1024),  # same count and score as b: name decides → a
        FamilyMember("sys_d_256", 256, 45.0, 1000.0, 1024),  # slower at the same size: not the base
        FamilyMember("sys_e_512", 512, 22.0, 1900.0, 1024),  # same batch as the base: strong scaling
    ]
    assert metrics.pick_base(family).system == "sys_a_256"
    rows = {r.system: r for r in metrics.family_scaling(family)}
    assert rows["sys_a_256"].convergence_scaling_efficiency == 1.0
    assert rows["sys_a_256"].weak_scaling_efficiency == 1.0
    # c vs a: speedup 40/12 = 3.333..., ratio 4 → 0.8333...; throughput 4000/1000 / 4 = 1.0
    assert rows["sys_c_1024"].speedup == pytest.approx(10 / 3)
    assert rows["sys_c_1024"].convergence_scaling_efficiency == pytest.approx(5 / 6)
    assert rows["sys_c_1024"].weak_scaling_efficiency == pytest.approx(1.0)
    assert rows["sys_c_1024"].is_scaling_pair and rows["sys_c_1024"].scaling_kind == "weak"  # 1024 → 4096
    assert rows["sys_e_512"].scaling_kind == "strong"
    assert rows["sys_e_512"].convergence_scaling_efficiency == pytest.approx(40 / 22 / 2)  # 0.909...
    # d (and b) are the base's size: not scaling rows, no speedup or efficiency
    assert not rows["sys_d_256"].is_scaling_pair and rows["sys_d_256"].convergence_scaling_efficiency is None
    assert rows["sys_b_256"].weak_scaling_efficiency is None and rows["sys_b_256"].speedup is None


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


# --- steady-state throughput on small hand-written logs, one per counting style ----------------



def _line(i: int, t_ms: float, key: str, value=None, **metadata) -> LogLine:
    return LogLine("", t_ms, key, {"value": value, "metadata": metadata}, i, t_ms)


def _log(events: list[tuple]) -> list[LogLine]:
    return [_line(i, t, key, value, **md) for i, (t, key, value, md) in enumerate(events)]


def test_running_total_counts_the_difference_between_blocks():
    # llama2_70b_lora logs samples_count as a running total: 0 → 1536 → 1920 → 2304 → 2688
    ev = [(0, "run_start", None, {})]
    counts, t = [0, 1536, 1920, 2304, 2688], 0.0
    for a, b in zip(counts, counts[1:], strict=False):
        ev += [(t, "block_start", None, {"samples_count": a}),
               (t + (600_000 if a == 0 else 24_000), "block_stop", None, {"samples_count": b})]
        t += 600_000 if a == 0 else 24_000
        ev.append((t + 1000, "eval_accuracy", 0.93, {"samples_count": b}))
        t += 1000
    ev.append((t, "run_stop", None, {"status": "success"}))
    thr = steady_state_throughput(_log(ev), "llama2_70b_lora")
    assert (thr.counting, thr.counted_in) == ("running_total", "samples")
    assert thr.per_second == pytest.approx(384 / 24.0)  # 16 sequences/s, not 1920/24


def test_per_block_count_is_the_blocks_own_count():
    # gpt3 logs each block's own token count (constant): 50331648 tokens per block
    ev = [(0, "run_start", None, {})]
    t = 0.0
    for i, seconds in enumerate((200.0, 150.0, 150.0, 160.0)):
        ev += [(t, "block_start", None, {"epoch_count": 50331648, "first_epoch_num": i * 50331648}),
               (t + seconds * 1000, "block_stop", None, {"first_epoch_num": i * 50331648}),
               (t + seconds * 1000, "eval_accuracy", 3.0, {"epoch_num": (i + 1) * 50331648})]
        t += seconds * 1000
    ev.append((t, "run_stop", None, {"status": "success"}))
    thr = steady_state_throughput(_log(ev), "gpt3")
    assert (thr.counting, thr.counted_in) == ("block_count", "tokens")  # SQL divides by 2,048 per sequence
    assert thr.per_second == pytest.approx(50331648 / 150.0)  # median of 150, 150, 160 s (first excluded)


def test_epochs_are_counted_in_epochs_and_epochs_in_samples_are_detected():
    # resnet: blocks of 4 epochs; unet3d (Dell style): every count a whole number of 168-sample datasets
    def blocks(bench, count, seconds):
        ev, t = [(0, "run_start", None, {})], 0.0
        for i in range(4):
            ev += [(t, "block_start", None, {"epoch_count": count, "first_epoch_num": i * count}),
                   (t + seconds * 1000, "block_stop", None, {}),
                   (t + seconds * 1000, "eval_accuracy", 0.5, {"epoch_num": (i + 1) * count})]
            t += seconds * 1000
        return _log(ev + [(t, "run_stop", None, {"status": "success"})])

    resnet = steady_state_throughput(blocks("resnet", 4, 20.0), "resnet")
    assert (resnet.counting, resnet.counted_in, resnet.per_second) == ("block_count", "epochs", pytest.approx(0.2))
    unet = steady_state_throughput(blocks("unet3d", 3360, 12.0), "unet3d")
    assert (unet.counted_in, unet.per_second) == ("samples", pytest.approx(280.0))  # 3360 volumes / 12 s
    unet_epochs = steady_state_throughput(blocks("unet3d", 20, 12.0), "unet3d")
    assert (unet_epochs.counted_in, unet_epochs.per_second) == ("epochs", pytest.approx(20 / 12.0))


def test_epoch_markers_count_one_epoch_each():
    ev, t = [(0, "run_start", None, {})], 0.0
    for i, seconds in enumerate((500.0, 470.0, 480.0, 460.0)):
        ev += [(t, "epoch_start", None, {"epoch_num": i}), (t + seconds * 1000, "epoch_stop", None, {"epoch_num": i}),
               (t + seconds * 1000 + 5000, "eval_accuracy", 0.3, {"epoch_num": i + 1})]
        t += seconds * 1000 + 5000
    thr = steady_state_throughput(_log(ev + [(t, "run_stop", None, {"status": "success"})]), "ssd")
    assert (thr.counting, thr.counted_in) == ("epoch_markers", "epochs")
    assert thr.per_second == pytest.approx(1 / 470.0)  # median of 1/470, 1/480, 1/460 (first excluded)


def test_no_usable_blocks_falls_back_to_eval_markers_or_says_why():
    # BERT from v2.1: one block for the whole run; evals count sequences in epoch_num
    ev = [(0, "run_start", None, {}), (0, "block_start", None, {"epoch_count": 1, "first_epoch_num": 1})]
    for i in range(1, 5):
        ev.append((i * 20_000, "eval_accuracy", 0.7, {"epoch_num": i * 150_000}))
    ev += [(80_000, "block_stop", None, {}), (80_000, "run_stop", None, {"status": "success"})]
    thr = steady_state_throughput(_log(ev), "bert")
    assert (thr.counting, thr.counted_in) == ("eval_markers", "samples")
    assert thr.per_second == pytest.approx(450_000 / 60.0)  # first to last eval
    # DLRM v1.0 numbers the first epoch 1: evals at 1.05, 1.10, ... → offset 1 for samples_to_converge
    dlrm = [(0, "run_start", None, {}), (0, "epoch_start", None, {"epoch_num": 1})]
    dlrm += [(i * 300_000, "eval_accuracy", 0.79, {"epoch_num": 1 + 0.05 * i}) for i in range(1, 4)]
    dlrm += [(900_000, "run_stop", None, {"status": "success"})]
    facts = run_facts(_log(dlrm))
    assert facts.progress_offset == 1.0
    assert steady_state_throughput(_log(dlrm), "dlrm").per_second == pytest.approx(0.10 / 600.0)
    # nothing to count: NULL with a reason
    bare = _log([(0, "run_start", None, {}), (60_000, "run_stop", None, {"status": "success"})])
    none = steady_state_throughput(bare, "dlrm_dcnv2")
    assert none.per_second is None and "no training blocks" in none.null_reason
    # a benchmark in no seed is read in the unit its keys name: epoch_num counts epochs (SQL then needs
    # the samples of an epoch, from the log's train_samples, to give samples per second)
    unknown = steady_state_throughput(_log(ev), "not_a_benchmark")
    assert (unknown.counted_in, unknown.per_second) == ("epochs", pytest.approx(450_000 / 60.0))
    samples = steady_state_throughput(_log([(t, k, v, {("samples_count" if x == "epoch_num" else x): y
                                                         for x, y in md.items()}) for t, k, v, md in ev]),
                                      "not_a_benchmark")
    assert samples.counted_in == "samples"
