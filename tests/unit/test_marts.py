"""The metric marts built over small hand-made upstream tables in a temporary DuckDB.

Upstream tables are created here with the contract columns (fct_training_run, fct_training_result,
dim_system with its `accelerator` key, dim_accelerator, fct_cloud_price_current) and the benchmark
seed; then dim_benchmark and the mart_* models run in dependency order, then the mart_* SQL tests.
"""

from __future__ import annotations

import math

import duckdb
import pytest

from pipelines.lib.report import metrics
from pipelines.lib.warehouse.models import load_models
from support.marts import RESULTS, TOKENS, fixture_database, mart_test_failures


@pytest.fixture()
def con(tmp_path):
    con = duckdb.connect(str(fixture_database(tmp_path / "marts.duckdb")))
    yield con
    con.close()


def rows(con, sql) -> list[dict]:
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=False)) for r in cur.fetchall()]


def test_models_build_and_sql_tests_pass(con):
    assert mart_test_failures(con) == []
    contract = {
        "mart_scaling_efficiency": ["round", "submitter", "benchmark", "accelerator", "base_system", "system",
                                    "base_accelerator_count", "accelerator_count", "size_ratio", "speedup",
                                    "convergence_scaling_efficiency", "weak_scaling_efficiency"],
        "mart_cost_to_train": ["round", "submitter", "system", "benchmark", "accelerator", "accelerator_count",
                               "score_minutes", "provider", "region", "pricing_model",
                               "price_per_accelerator_hour_usd", "cost_to_train_usd", "is_native_cloud"],
        "mart_utilization": ["round", "submitter", "system", "benchmark", "mfu"],
        "dim_benchmark": ["benchmark", "task", "model", "parameters", "tokens_or_samples_per_sample",
                          "model_flops_per_sample", "flops_derivation", "source"],
    }
    for table, columns in contract.items():
        have = [d[0] for d in con.execute(f"select * from {table} limit 0").description]
        assert set(columns) <= set(have), (table, set(columns) - set(have))


def test_scaling_efficiency_by_hand(con):
    got = {r["system"]: r for r in rows(con, "select * from mart_scaling_efficiency")}
    # + the resnet result: no accelerator key → the declared model name; a family of one, no throughput
    assert len(got) == len(RESULTS) + 1
    acme = got["acme-x"]
    assert acme["accelerator"] == "Acme X1" and not acme["accelerator_is_canonical"] and acme["is_base"]
    assert acme["weak_scaling_efficiency"] is None and acme["convergence_scaling_efficiency"] == 1
    # Trillium family: base 512 chips, 100 min, 1000/s
    t = got["tpu-trillium-2048"]
    assert t["base_system"] == "tpu-trillium-512" and t["size_ratio"] == 4
    assert t["speedup"] == pytest.approx(100 / 27)
    assert t["convergence_scaling_efficiency"] == pytest.approx(100 / 27 / 4)  # 0.9259
    assert t["throughput_scaling_efficiency"] == pytest.approx(3800 / 1000 / 4)  # 0.95 (mean of 0.98/1/1.02 × 3800)
    assert t["scaling_kind"] is None and t["weak_scaling_efficiency"] is None  # no batch sizes: no kind
    assert got["tpu-trillium-3072"]["convergence_scaling_efficiency"] == pytest.approx(100 / 19 / 6)
    # v5p is its own family (accelerator is part of the family)
    assert got["tpu-v5p-2048"]["base_system"] == "tpu-v5p-512"
    assert got["tpu-v5p-2048"]["throughput_scaling_efficiency"] == pytest.approx(3200 / 850 / 4)
    # tie at 512 H100s: the faster system is the base; the slower one is the same size: not a scaling row
    assert got["dgxh100_n64_b"]["base_system"] == "dgxh100_n64"
    assert got["dgxh100_n64_b"]["is_scaling_pair"] is False
    assert got["dgxh100_n64_b"]["convergence_scaling_efficiency"] is None
    assert got["dgxh100_n128"]["convergence_scaling_efficiency"] == pytest.approx(50 / 26 / 2)
    for r in got.values():
        if r["is_scaling_pair"] or r["is_base"]:
            assert r["convergence_scaling_efficiency"] > 0 and r["speedup"] > 0
        if r["is_base"]:
            assert r["convergence_scaling_efficiency"] == 1 and r["weak_scaling_efficiency"] in (1, None)
    # the SQL agrees with the reference functions
    family = [metrics.FamilyMember(s, n, score, thr) for _sub, s, acc, n, score, thr in RESULTS
              if acc == "google-tpu-trillium"]
    for ref in metrics.family_scaling(family):
        assert got[ref.system]["convergence_scaling_efficiency"] == pytest.approx(ref.convergence_scaling_efficiency)
        assert got[ref.system]["throughput_scaling_efficiency"] == pytest.approx(ref.throughput_scaling_efficiency)


def test_cost_to_train_by_hand(con):
    got = rows(con, "select * from mart_cost_to_train order by system, provider, pricing_model")
    # 9 gpt3 results: trillium ×4 × 2 options, v5p ×2 × 1, H100 ×3 × 2 providers = 8 + 2 + 6 = 16
    assert len(got) == 16
    by = {(r["system"], r["provider"], r["pricing_model"]): r for r in got}
    # 100 min = 5/3 h × 512 chips × $2.70 (10.80 / 4) = $2,304
    assert by[("tpu-trillium-512", "gcp", "on_demand")]["cost_to_train_usd"] == pytest.approx(2304.0)
    # spot $1.00 per chip-hour → $853.33
    assert by[("tpu-trillium-512", "gcp", "spot")]["cost_to_train_usd"] == pytest.approx(100 / 60 * 512 * 1.0)
    # the newest aws price (98.32 / 8 = 12.29), not the older 120.00 row: 50/60 × 512 × 12.29 = 5,243.73
    assert by[("dgxh100_n64", "aws", "on_demand")]["cost_to_train_usd"] == pytest.approx(50 / 60 * 512 * 12.29)
    # cost scales with accelerator count and price: cost / (hours × count × price) == 1 everywhere
    for r in got:
        expected = metrics.cost_to_train(r["score_minutes"], r["accelerator_count"], r["price_per_accelerator_hour_usd"])
        assert r["cost_to_train_usd"] == pytest.approx(expected) and r["cost_to_train_usd"] > 0
        assert r["perf_per_dollar"] == pytest.approx(1 / expected)
        assert r["is_native_cloud"] == ((r["submitter"], r["provider"]) in {("Google", "gcp")})  # NVIDIA is no cloud
    assert by[("tpu-trillium-512", "gcp", "on_demand")]["is_native_cloud"] is True
    assert by[("dgxh100_n64", "aws", "on_demand")]["is_native_cloud"] is False
    # same price, twice the chips at about half the time: 1024 × 26 / (512 × 50) of the cost
    ratio = (by[("dgxh100_n128", "aws", "on_demand")]["cost_to_train_usd"]
             / by[("dgxh100_n64", "aws", "on_demand")]["cost_to_train_usd"])
    assert ratio == pytest.approx(1024 * 26 / (512 * 50))


def test_utilization_by_hand(con):
    got = {r["system"]: r for r in rows(con, "select * from mart_utilization")}
    assert len(got) == len(RESULTS) + 1
    # 1.2e9 tokens × 6 × 175e9 FLOPs/token = 1.26e21; mean-run time 100 min × 512 × 918e12 FLOP/s
    assert got["tpu-trillium-512"]["mfu"] == pytest.approx(1.26e21 / (6000 * 512 * 918e12))
    assert got["dgxh100_n128"]["mfu"] == pytest.approx(metrics.mfu(TOKENS, 6 * 175e9, 26.0, 1024, 989e12))
    assert got["acme-x"]["mfu"] is None  # resnet: no sound FLOPs figure
    for r in got.values():
        assert r["mfu"] is None or 0 < r["mfu"] <= 1  # all BF16-only in this fixture


def test_dim_benchmark(con):
    got = {r["benchmark"]: r for r in rows(con, "select * from dim_benchmark")}
    assert got["gpt3"]["model_flops_per_sample"] == pytest.approx(6 * 175e9 * 2048)
    assert got["gpt3"]["model_flops_per_convergence_unit"] == pytest.approx(6 * 175e9)
    assert "175e9" in got["gpt3"]["flops_derivation"]
    assert got["llama31_405b"]["model_flops_per_convergence_unit"] == pytest.approx(6 * 405e9 * 8192)
    # ResNet-50: 3 × 2 × 4.1e9 FLOPs per image; convergence in epochs → × 1,281,167 images per epoch
    assert got["resnet"]["model_flops_per_sample"] == pytest.approx(3 * 2 * 4.1e9)
    assert got["resnet"]["model_flops_per_convergence_unit"] == pytest.approx(3 * 2 * 4.1e9 * 1281167)
    # one throughput unit per benchmark; dataset sizes (with a source) where the logs count epochs
    assert (got["gpt3"]["throughput_unit"], got["llama2_70b_lora"]["throughput_unit"]) == ("sequences/s", "sequences/s")
    assert got["unet3d"]["dataset_size"] == 168 and got["unet3d"]["dataset_size_source"]
    # SSD-ResNet34 trained on COCO through v1.1; RetinaNet (OpenImages) took the ssd folder from v2.0
    assert (got["ssd"]["dataset_size"], got["ssd"]["earlier_dataset_size"]) == (1170301, 117266)
    assert got["ssd"]["earlier_dataset_last_round"] == "v1.1"
    # absolute, sourced bounds of the convergence point, in samples
    assert got["bert"]["samples_to_converge_min"] < 1981952 < 5770240 < got["bert"]["samples_to_converge_max"]
    assert "rcps_bert.json" in got["bert"]["bounds_source"]
    for r in got.values():
        assert (r["samples_to_converge_min"] is None) == (r["samples_to_converge_max"] is None), r["benchmark"]
        assert r["bounds_source"], r["benchmark"]
    for r in got.values():
        assert r["throughput_unit"], r["benchmark"]
        if r["convergence_unit"] == "epochs" and r["dataset_size"]:
            assert r["dataset_size_source"], r["benchmark"]
    assert got["bert"]["model_flops_per_sample"] is None  # unpadded sequences: no sound figure
    # v6.0's mixture-of-experts benchmarks: FLOPs of the parameters active per token, each figure sourced
    for moe in ("gpt_oss_20b", "deepseekv3_671b"):
        assert got[moe]["model_flops_per_sample"] and "active" in got[moe]["flops_derivation"] and got[moe]["source"]
    # v6.1's GRPO: rollouts and routing, no sound figure: NULL and why
    assert got["qwen35_397b_grpo"]["model_flops_per_sample"] is None and got["qwen35_397b_grpo"]["flops_derivation"]
    for r in got.values():
        if r["parameters"] and r["tokens_or_samples_per_sample"] and r["model_flops_per_sample"]:
            k = r["model_flops_per_sample"] / (r["parameters"] * r["tokens_or_samples_per_sample"])
            assert math.isclose(k, 6) or math.isclose(k, 4)  # 4 for LoRA (no weight gradients)


def test_sql_tests_catch_fan_out_and_bad_rows(con):
    con.execute("insert into mart_cost_to_train select * from mart_cost_to_train limit 1")
    con.execute("update mart_scaling_efficiency set convergence_scaling_efficiency = 0.5 where is_base "
                "and system = 'tpu-trillium-512'")
    con.execute("update mart_utilization set mfu = 2.5 where system = 'tpu-v5p-512'")
    failures = " ".join(mart_test_failures(con))
    for name in ("mart_cost_to_train_unique", "mart_scaling_efficiency_base", "mart_utilization_consistent"):
        assert name in failures


def test_scaling_families_compare_like_with_like(con):
    """Two frameworks, one same-size variant, a batch change, a run failing the throughput check and
    two results without a division, all NVIDIA llama2_70b_lora v5.0 on one accelerator."""
    acc = "nvidia-test-gpu"
    # system, count, framework, division, score, global batch, run throughputs (reason for a failing run)
    family = [
        ("n1_pytorch", 8, "PyTorch NVIDIA Release 24.09", "closed", 30.0, 8, [(100.0, None)]),
        ("n1_pytorch_b", 8, "PyTorch NVIDIA Release 24.09", "closed", 32.0, 8, [(98.0, None)]),  # same size
        ("n8_nemo", 64, "NeMo + PyTorch", "closed", 5.0, 64, [(720.0, None), (5000.0, "ratio 9.1 outside")]),
        ("n16_nemo", 128, "NeMo + PyTorch", "closed", 4.0, 8, [(1000.0, None)]),  # same batch as the base
        ("n8_jax", 64, "JAX", "closed", 6.0, 64, [(650.0, None)]),  # another framework: its own family
        ("x_nodiv", 8, "PyTorch", None, 40.0, 8, [(90.0, None)]),  # no division: never merged
        ("y_nodiv", 64, "PyTorch", None, 6.0, 64, [(600.0, None)]),
    ]
    for system, n, fw, div, score, gbs, runs in family:
        fam = "jax" if "JAX" in fw else "pytorch"  # dim_system's framework_family (framework_families.csv)
        con.execute("insert into dim_system by name select 'v5.0' as round, 'NVIDIA' as submitter, ? as system, "
                    "? as system_name, ? as division, 'TEST GPU' as accelerator_model_name, ? as accelerator_count, "
                    "? as accelerator, ? as framework, ? as framework_family",
                    [system, system.upper(), div, n, acc, fw, fam])
        con.execute("insert into fct_training_result by name select 'v5.0' as round, 'NVIDIA' as submitter, "
                    "? as system, 'llama2_70b_lora' as benchmark, ? as division, ? as accelerator_count, "
                    "? as score_minutes, ? as global_batch_size", [system, div, n, score, gbs])
        for i, (thr, reason) in enumerate(runs):
            con.execute("insert into fct_training_run by name select 'v5.0' as round, 'NVIDIA' as submitter, "
                        "? as system, 'llama2_70b_lora' as benchmark, ? as run_file, true as scored, "
                        "? as steady_state_throughput, 'sequences/s' as throughput_unit, "
                        "? as throughput_check_reason", [system, f"{system}/result_{i}.txt", thr, reason])
    con.execute(f"create or replace table mart_scaling_efficiency as {load_models()['mart_scaling_efficiency'].sql}")
    assert mart_test_failures(con) == []
    got = {r["system"]: r for r in rows(con, "select * from mart_scaling_efficiency where round = 'v5.0'")}
    assert len(got) == len(family)
    # PyTorch release and NeMo + PyTorch: one family (pytorch), based on the fastest 8-GPU system
    for system in ("n1_pytorch_b", "n8_nemo", "n16_nemo"):
        assert got[system]["base_system"] == "n1_pytorch" and got[system]["framework_family"] == "pytorch"
    same = got["n1_pytorch_b"]
    assert same["is_scaling_pair"] is False and same["convergence_scaling_efficiency"] is None
    assert same["weak_scaling_efficiency"] is None and same["speedup"] is None
    nemo = got["n8_nemo"]
    assert nemo["is_scaling_pair"] and nemo["scaling_kind"] == "weak"
    assert (nemo["base_global_batch_size"], nemo["global_batch_size"]) == (8, 64)
    assert nemo["convergence_scaling_efficiency"] == pytest.approx(30 / 5 / 8)  # 0.75
    # the run failing the throughput check is left out of the mean (720, not (720 + 5000) / 2), and said so
    assert nemo["weak_scaling_efficiency"] == pytest.approx(720 / 100 / 8)  # 0.9
    assert nemo["throughput_exclusion"].startswith("1 of 2 runs left out: ratio 9.1")
    assert got["n16_nemo"]["scaling_kind"] == "strong"
    # a strong pair has a throughput efficiency, named for what it is, and no weak one
    assert got["n16_nemo"]["throughput_scaling_efficiency"] == pytest.approx(1000 / 100 / 16)  # 0.625
    assert got["n16_nemo"]["weak_scaling_efficiency"] is None
    # JAX at 64 GPUs is its own family's base, not compared with the PyTorch 8-GPU base
    jax = got["n8_jax"]
    assert jax["is_base"] and jax["base_system"] == "n8_jax" and jax["framework_family"] == "jax"
    # results with no division are families of their own
    for system in ("x_nodiv", "y_nodiv"):
        assert got[system]["is_base"] and got[system]["base_system"] == system and got[system]["family_size"] == 1


def test_metric_checks_name_the_offending_rows(con):
    """The scaling check's findings name round, submitter, system, benchmark and value, in a readable line."""
    # a throughput efficiency above 1.10 is named with its measure and stated cause
    con.execute("update mart_scaling_efficiency set throughput_scaling_efficiency = 1.3, "
                "weak_scaling_flag = 'per-accelerator batch grows 2×' where system = 'tpu-v5p-2048'")
    scaling = metrics.scaling_findings(con)
    assert [(r["round"], r["submitter"], r["system"], r["benchmark"], r["value"], r["measure"]) for r in scaling] == [
        ("v4.1", "Google", "tpu-v5p-2048", "gpt3", 1.3, "throughput")]
    assert "v4.1 Google tpu-v5p-2048 gpt3 = 1.3 (measure throughput, cause per-accelerator batch grows 2×)" in (
        metrics.describe("scaling out of range", scaling))
    # the mart's own "cause unknown: ..." reads once, not "cause cause unknown"
    con.execute("update mart_scaling_efficiency set weak_scaling_flag = 'cause unknown: the logs do not state both "
                "global batch sizes' where system = 'tpu-v5p-2048'")
    assert "(measure throughput, cause unknown: the logs do not state both global batch sizes)" in (
        metrics.describe("scaling out of range", metrics.scaling_findings(con)))
