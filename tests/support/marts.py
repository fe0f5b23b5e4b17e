"""The hand-made upstream tables the mart, report, site and precision tests build their models over."""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

import duckdb

from pipelines.lib.reference.seeds import load_seeds
from pipelines.lib.warehouse.models import create_macros, grain_test_sql, load_models, load_tests, model_order

MY_MODELS = ("dim_benchmark_dataset", "dim_benchmark", "int_submitter_cloud", "mart_scaling_efficiency", "mart_price_offer",
             "int_accelerator_offer", "mart_cost_to_train", "mart_cost_to_train_headline", "mart_utilization")
TOKENS = 1.2e9  # gpt3 converges in ~1.2e9 tokens (its RCP unit)
SEQUENCES = TOKENS / 2048  # ... which is samples_to_converge: 2,048-token sequences

# (submitter, system, accelerator, count, score_minutes, mean throughput) — all v4.1, gpt3, closed
RESULTS = [
    ("Google", "tpu-trillium-512", "google-tpu-trillium", 512, 100.0, 1000.0),
    ("Google", "tpu-trillium-1024", "google-tpu-trillium", 1024, 52.0, 1950.0),
    ("Google", "tpu-trillium-2048", "google-tpu-trillium", 2048, 27.0, 3800.0),
    ("Google", "tpu-trillium-3072", "google-tpu-trillium", 3072, 19.0, 5500.0),
    ("Google", "tpu-v5p-512", "google-tpu-v5p", 512, 120.0, 850.0),
    ("Google", "tpu-v5p-2048", "google-tpu-v5p", 2048, 33.0, 3200.0),
    ("NVIDIA", "dgxh100_n64", "nvidia-h100-sxm-80gb", 512, 50.0, 2000.0),
    ("NVIDIA", "dgxh100_n64_b", "nvidia-h100-sxm-80gb", 512, 55.0, 1900.0),  # same size, slower: not base
    ("NVIDIA", "dgxh100_n128", "nvidia-h100-sxm-80gb", 1024, 26.0, 3900.0),
]
PEAK = {"google-tpu-trillium": 918e12, "google-tpu-v5p": 459e12, "nvidia-h100-sxm-80gb": 989e12}
# provider, sku, region, pricing_model, accelerator, per instance, $/h, effective date
PRICES = [
    ("gcp", "ct6e-standard-4t", "us-central1", "on_demand", "google-tpu-trillium", 4, 10.80, "2026-11-01"),
    ("gcp", "ct6e-standard-4t", "us-central1", "spot", "google-tpu-trillium", 4, 4.00, "2026-11-01"),
    ("gcp", "ct5p-hightpu-4t", "us-east5", "on_demand", "google-tpu-v5p", 4, 16.80, "2026-11-01"),
    ("aws", "p5.48xlarge", "us-east-1", "on_demand", "nvidia-h100-sxm-80gb", 8, 98.32, "2026-11-01"),
    # an older row for the same price option: must not fan out
    ("aws", "p5.48xlarge", "us-east-1", "on_demand", "nvidia-h100-sxm-80gb", 8, 120.00, "2026-01-01"),
    ("azure", "Standard_ND96isr_H100_v5", "eastus", "on_demand", "nvidia-h100-sxm-80gb", 8, 98.32, "2026-11-01"),
    # a SkyPilot catalog row for the same offer: never replaces the provider's own API row
    ("skypilot-aws", "p5.48xlarge", "us-east-1", "on_demand", "nvidia-h100-sxm-80gb", 8, 98.32, "2026-11-01"),
]


TYPES = {
    "dim_system": {"round": "varchar", "submitter": "varchar", "system": "varchar", "system_name": "varchar",
                   "division": "varchar", "accelerator_model_name": "varchar", "accelerator_count": "integer",
                   "accelerator": "varchar", "availability_category": "varchar", "precision_stated": "varchar",
                   "precision_evidence": "varchar", "framework": "varchar", "framework_family": "varchar",
                   "organization": "varchar"},
    "fct_training_result": {"round": "varchar", "submitter": "varchar", "system": "varchar", "benchmark": "varchar",
                            "division": "varchar", "availability": "varchar", "accelerator_model_name": "varchar",
                            "accelerator_count": "integer", "score_minutes": "double", "samples_to_converge": "double",
                            "global_batch_size": "double", "carried_over_from": "varchar"},
    "fct_training_run": {"round": "varchar", "submitter": "varchar", "system": "varchar", "benchmark": "varchar",
                         "run_file": "varchar", "scored": "boolean", "in_olympic_mean": "boolean",
                         "time_to_train_minutes": "double", "samples_to_converge": "double",
                         "steady_state_throughput": "double", "throughput_unit": "varchar",
                         "precision_logged": "varchar", "precision_evidence": "varchar",
                         "precision_statement_unmapped": "varchar", "throughput_check_reason": "varchar",
                         "steady_to_end_to_end_ratio": "double"},
    "dim_accelerator": {"accelerator": "varchar", "vendor": "varchar", "memory_gb": "double",
                        "peak_dense_bf16_flops": "double", "peak_dense_fp8_flops": "double",
                        "peak_dense_fp4_flops": "double", "note": "varchar"},
    "fct_cloud_price_current": {"provider": "varchar", "sku": "varchar", "region": "varchar",
                                "pricing_model": "varchar", "accelerator": "varchar",
                                "accelerators_per_instance": "integer", "price_per_hour_usd": "double",
                                "price_per_accelerator_hour_usd": "double", "effective_date": "date",
                                "fetched_at": "timestamp", "source_url": "varchar", "price_source": "varchar"},
}


def _create(con: duckdb.DuckDBPyConnection, name: str, records: list[dict]) -> None:
    types = TYPES[name]
    con.execute(f"create or replace table {name} ({', '.join(f'{c} {t}' for c, t in types.items())})")
    con.executemany(
        f"insert into {name} values ({', '.join('?' for _ in types)})",
        [[r.get(c) for c in types] for r in records],
    )


def build_fixture(con: duckdb.DuckDBPyConnection) -> None:
    """Create the upstream tables by hand, then build this issue's models over them."""
    systems = (
        [
            {"round": "v4.1", "submitter": sub, "system": sys, "system_name": sys.replace("-", " ").upper(),
             "division": "closed", "accelerator_model_name": acc.upper(), "accelerator_count": n, "accelerator": acc,
             "framework_family": "jax" if sub == "Google" else "pytorch", "organization": sub}
            for sub, sys, acc, n, _score, _thr in RESULTS
        ]
        # a ResNet result on an accelerator without price or FLOPs figure
        + [{"round": "v4.1", "submitter": "Acme", "system": "acme-x", "system_name": "ACME X", "division": "closed",
            "accelerator_model_name": "Acme X1", "accelerator_count": 8, "accelerator": None,
            "framework_family": "pytorch", "organization": "Acme"}]
    )
    results = (
        [
            {"round": "v4.1", "submitter": sub, "system": sys, "benchmark": "gpt3", "division": "closed",
             "availability": "available", "accelerator_model_name": acc.upper(), "accelerator_count": n,
             "score_minutes": score, "samples_to_converge": SEQUENCES}
            for sub, sys, acc, n, score, _thr in RESULTS
        ]
        + [{"round": "v4.1", "submitter": "Acme", "system": "acme-x", "benchmark": "resnet", "division": "closed",
            "availability": "available", "accelerator_model_name": "Acme X1", "accelerator_count": 8,
            "score_minutes": 30.0, "samples_to_converge": 40.0 * 1281167}]
    )
    runs = []
    for sub, sys, _acc, _n, score, thr in RESULTS:
        # three scored runs around the score; throughputs average to `thr`; the middle one is the mean
        for i, (dt, f) in enumerate(((-1.0, 0.98), (0.0, 1.0), (1.0, 1.02))):
            runs.append({"round": "v4.1", "submitter": sub, "system": sys, "benchmark": "gpt3",
                         "run_file": f"{sys}/result_{i}.txt", "scored": True, "in_olympic_mean": i == 1,
                         "time_to_train_minutes": score + dt, "samples_to_converge": SEQUENCES,
                         "steady_state_throughput": thr * f, "throughput_unit": "epoch_count/s"})
    runs.append({"round": "v4.1", "submitter": "Acme", "system": "acme-x", "benchmark": "resnet",
                 "run_file": "acme-x/result_0.txt", "scored": True, "in_olympic_mean": True,
                 "time_to_train_minutes": 30.0, "samples_to_converge": 40.0 * 1281167,
                 "steady_state_throughput": None, "throughput_unit": None})
    accelerators = ([
        {"accelerator": acc, "vendor": acc.split("-")[0], "memory_gb": 95.0, "peak_dense_bf16_flops": peak}
        for acc, peak in PEAK.items()
    ])
    prices = ([
        {"provider": p.removeprefix("skypilot-"), "price_source": "catalog" if p.startswith("skypilot-") else "api",
         "sku": sku, "region": region, "pricing_model": model, "accelerator": acc,
         "accelerators_per_instance": per, "price_per_hour_usd": hourly,
         "price_per_accelerator_hour_usd": hourly / per, "effective_date": eff,
         "fetched_at": f"{eff} 00:00:00", "source_url": f"https://example.invalid/{p}/{sku}"}
        for p, sku, region, model, acc, per, hourly, eff in PRICES
    ])
    for name, records in {"dim_system": systems, "fct_training_result": results, "fct_training_run": runs,
                          "dim_accelerator": accelerators, "fct_cloud_price_current": prices}.items():
        _create(con, name, records)
    load_seeds(con)
    create_macros(con)
    submitters_of(con)
    models = {name: model for name, model in load_models().items() if name in MY_MODELS}
    for name in model_order(models):
        con.execute(f"create or replace table {name} as {models[name].sql}")


@functools.cache
def _built_once() -> tempfile.TemporaryDirectory:
    """A temporary folder holding the database `build_fixture` makes, built once per test process (the folder
    is removed when the process ends)."""
    folder = tempfile.TemporaryDirectory(prefix="marts-fixture-")
    with duckdb.connect(str(Path(folder.name) / "marts.duckdb")) as con:
        build_fixture(con)
    return folder


def fixture_database(target: Path) -> Path:
    """A copy at `target` of the database `build_fixture` makes, for a test to change as it likes."""
    shutil.copyfile(Path(_built_once().name) / "marts.duckdb", target)
    return target


def submitters_of(con: duckdb.DuckDBPyConnection) -> None:
    """The staging tables int_submitter_cloud reads, as far as it reads them (the submitters), from
    the hand-made dim_system and fct_training_result."""
    con.execute("create or replace table stg_training_systems as select distinct submitter from dim_system")
    con.execute("create or replace table stg_training_runs as select distinct submitter from fct_training_result")


def mart_test_failures(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The SQL tests of this fixture's mart_ models (files and the generated grain tests) that return rows."""
    return sql_test_failures(con, {m for m in MY_MODELS if m.startswith("mart_")})


def sql_test_failures(con: duckdb.DuckDBPyConnection, models: set[str]) -> list[str]:
    """The SQL tests (files and generated grain tests) of `models` that return rows, with the first rows."""
    failures = []
    for test in load_tests(load_models()):
        if test.model not in models:
            continue
        sql = test.sql
        if test.generated:
            columns = [c for (c,) in con.execute(
                "select column_name from information_schema.columns where table_name = ?", [test.model]).fetchall()]
            sql = grain_test_sql(test.model, test.grain, columns)
        rows = con.execute(sql).fetchall()
        if rows:
            failures.append(f"{test.name}: {rows[:3]}")
    return failures
