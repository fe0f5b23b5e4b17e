"""The Dagster code location loads with every asset, check, schedule and sensor the docs name."""

from pipelines.definitions import defs


def test_code_location_has_the_documented_pieces():
    definitions = defs()
    repo = definitions.get_repository_def()
    assets = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert {
        "training_results_archive", "training_round_tables", "warehouse_parquet_export",
        "mlperf_report", "azure_prices", "aws_prices", "gcp_prices", "oci_prices", "curated_prices",
        # every SQL model is an asset of its own
        "stg_training_runs", "int_run_scoring", "dim_system", "fct_training_result", "fct_cloud_price_current",
        "mart_scaling_efficiency", "mart_cost_to_train", "mart_utilization",
    } <= assets
    assert "mlperf_warehouse" not in assets
    groups = {key.to_user_string(): repo.asset_graph.get(key).group_name for key in repo.asset_graph.get_all_asset_keys()}
    assert {groups[k] for k in ("warehouse_parquet_export", "mlperf_report")} == {"outputs"}
    assert groups["mlperf_site"] == "site"  # not part of a refresh: it takes several times as long
    assert (groups["stg_training_runs"], groups["fct_training_result"], groups["mart_utilization"]) == (
        "staging", "core", "metrics")
    checks = {key.name for key in repo.asset_graph.asset_check_keys}
    assert {"quarantine_counts", "unmapped_accelerators", "metric_marts_sensible",
            "accelerators_without_peak", "mart_utilization_mfu_above_one", "fct_training_result_unique",
            "fct_training_result_positive"} <= checks
    assert {s.name for s in repo.schedule_defs} >= {"daily_price_refresh", "weekly_training_results", "weekly_hpc_results",
                                                    "weekly_inference_results"}
    assert {s.name for s in repo.sensor_defs} >= {"mlperf_round_discovery", "publish_after_refresh",
                                                  "outputs_after_publish", "site_after_publish"}
    # One trigger mechanism for what follows a publish: run-status sensors, no automation conditions beside them.
    conditioned = [key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()
                   if repo.asset_graph.get(key).automation_condition is not None]
    assert conditioned == []
