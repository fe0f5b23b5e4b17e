"""The Dagster code location loads with every asset, check, schedule and sensor the docs name."""

from pipelines.definitions import defs


def test_code_location_has_the_documented_pieces():
    definitions = defs()
    repo = definitions.get_repository_def()
    assets = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert {
        "mlperf_results_archive", "mlperf_round_tables", "mlperf_warehouse", "warehouse_parquet_export",
        "mlperf_report", "azure_prices", "aws_prices", "gcp_prices", "oci_prices", "curated_prices",
    } <= assets
    checks = {key.name for key in repo.asset_graph.asset_check_keys}
    assert {"quarantine_counts", "training_result_unique", "unmapped_accelerators", "metric_marts_sensible",
            "accelerators_without_peak", "mfu_at_most_one"} <= checks
    assert {s.name for s in repo.schedule_defs} >= {"daily_price_refresh", "weekly_mlperf_results"}
    assert {s.name for s in repo.sensor_defs} >= {"mlperf_round_discovery", "publish_after_refresh"}
