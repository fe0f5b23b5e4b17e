"""Staging a price snapshot: rows failing the CloudPriceRow model join the quarantine, never vanish."""

from datetime import UTC, date, datetime

import polars as pl

from pipelines.lib.prices.fetch import stage_prices
from pipelines.lib.prices.normalize import PARSED_QUARANTINE_SCHEMA, PRICE_SCHEMA, ParsedPrices


def _row(**overrides):
    row = {
        "provider": "azure", "sku": "Standard_ND96isr_H100_v5", "region": "eastus", "pricing_model": "on_demand",
        "accelerator": "nvidia-h100-sxm-80gb", "accelerators_per_instance": 8, "price_per_hour_usd": 98.32,
        "price_per_accelerator_hour_usd": 12.29, "effective_date": date(2026, 9, 1), "currency": "USD",
        "unit": "1 Hour", "source_url": "http://127.0.0.1/api/retail/prices", "raw_ref": "meter-1", "price_source": "api",
    }
    return row | overrides


def test_invalid_rows_are_quarantined_with_the_failed_check(warehouse):
    prices = pl.DataFrame([_row(), _row(raw_ref="meter-2", region="westus", price_per_accelerator_hour_usd=99.0)],
                          schema=PRICE_SCHEMA)
    parsed = ParsedPrices(prices, pl.DataFrame(schema=PARSED_QUARANTINE_SCHEMA))
    paths = stage_prices("azure", parsed, warehouse, "2026-11-29", datetime(2026, 11, 29, tzinfo=UTC))
    assert (paths["rows"], paths["quarantined"]) == (1, 1)
    staged = pl.read_parquet(paths["prices"])
    quarantined = pl.read_parquet(paths["quarantine"])
    assert staged["raw_ref"].to_list() == ["meter-1"]
    assert staged["fetched_at"].dtype == pl.Datetime("us", "UTC") and staged["snapshot"][0] == "azure-2026-11-29"
    assert quarantined.height == 1
    assert quarantined["partition"][0] == "azure-2026-11-29"
    assert "price_per_accelerator_hour_usd != price_per_hour_usd / accelerators_per_instance" in quarantined["reason"][0]
    assert "meter-2" in quarantined["payload"][0]


def _stage_snapshot_before_price_source(warehouse) -> None:
    """An older snapshot: no price_source column, curated Google rows as provider `gcp-list`."""
    from pipelines.lib.staging.files import write_staged

    fetched = {"fetched_at": datetime(2026, 11, 1, tzinfo=UTC), "snapshot": "curated-2026-11-01"}
    old = pl.DataFrame([_row(provider="gcp-list", sku="tpu-v5p chip", region="us-east5", accelerator="google-tpu-v5p",
                             accelerators_per_instance=1, price_per_hour_usd=4.2, price_per_accelerator_hour_usd=4.2,
                             raw_ref="curated_list_prices.csv:2") | fetched])
    old = old.drop("price_source")
    assert "price_source" not in old.columns
    write_staged("cloud_prices", "curated-2026-11-01", old, warehouse)


def _published_prices(warehouse, table: str) -> list[tuple]:
    import duckdb

    from pipelines.lib.io.paths import published_db
    from pipelines.lib.warehouse import build as wh

    assert wh.build(warehouse).published
    with duckdb.connect(str(published_db(warehouse)), read_only=True) as con:
        return sorted(con.execute(f"select provider, price_source from {table}").fetchall())


def test_snapshots_staged_before_price_source_alone_are_read_with_one_provider_per_cloud(warehouse):
    _stage_snapshot_before_price_source(warehouse)
    assert _published_prices(warehouse, "fct_cloud_price") == [("gcp", "list")]


def test_snapshots_staged_before_and_after_price_source_are_read_together(warehouse):
    _stage_snapshot_before_price_source(warehouse)
    new = pl.DataFrame([_row()], schema=PRICE_SCHEMA)
    stage_prices("azure", ParsedPrices(new, pl.DataFrame(schema=PARSED_QUARANTINE_SCHEMA)), warehouse, "2026-11-29")
    assert _published_prices(warehouse, "fct_cloud_price_current") == [("azure", "api"), ("gcp", "list")]
