"""Pandera (polars) models for the cloud price tables.

- `CloudPriceRow`: the normalized rows every price parser emits (contract of fct_cloud_price;
  `fetched_at` is added by the caller, so it is optional here).
- `AzureRetailItem`, `OciPriceItem`: the flat fields of the raw shapes the parsers rely on.
- `AcceleratorRow`, `AcceleratorAliasRow`: the dim_accelerator seed files.
`pipelines.lib.staging.validation.validate_or_quarantine` validates lazily and turns failure cases into
quarantine rows rather than dropping them (drop_invalid_rows would hide the errors).
"""

from __future__ import annotations

from typing import Annotated

import pandera.polars as pa
import polars as pl
from pandera.engines import polars_engine as pe

from pipelines.lib.reference.vocabulary import values

PRICING_MODELS = values("pricing_model")
# why: the dearest accelerator-hour anyone lists today is ~15 USD (B200/GB200 on demand); ten
# times that is no real price but a placeholder or a per-pod figure mistaken for a per-chip one.
MAX_PLAUSIBLE_PER_ACCELERATOR_HOUR_USD = 150.0
# Where a price came from: a provider's own price API, a curated published list price
# (curated_list_prices.csv), or the public SkyPilot catalog. One provider name per cloud whatever
# the source (Google is `gcp` for all three); marts prefer api over list over catalog.
PRICE_SOURCES = ("api", "list", "catalog")


class CloudPriceRow(pa.DataFrameModel):
    provider: pe.String = pa.Field(str_length={"min_value": 1})
    sku: pe.String = pa.Field(str_length={"min_value": 1})
    region: pe.String = pa.Field(str_length={"min_value": 1})
    pricing_model: pe.String = pa.Field(isin=list(PRICING_MODELS))
    accelerator: pe.String = pa.Field(nullable=True)
    accelerators_per_instance: pe.Int64 = pa.Field(ge=1, le=65_536)  # TPU pod slices: thousands of chips
    # An upper bound also refuses NaN (it compares above every number in Polars).
    price_per_hour_usd: pe.Float64 = pa.Field(gt=0, le=MAX_PLAUSIBLE_PER_ACCELERATOR_HOUR_USD * 65_536)
    price_per_accelerator_hour_usd: pe.Float64 = pa.Field(gt=0, le=MAX_PLAUSIBLE_PER_ACCELERATOR_HOUR_USD)
    effective_date: pe.Date = pa.Field(nullable=True)
    currency: pe.String = pa.Field(isin=["USD"])
    unit: pe.String
    source_url: pe.String = pa.Field(nullable=True)
    raw_ref: pe.String = pa.Field(str_length={"min_value": 1})
    price_source: pe.String = pa.Field(isin=list(PRICE_SOURCES))
    # SkyPilot catalog rows only (NULL otherwise): the catalog version (`v8`) the row was read from, and
    # whether that is older than the newest version (the cloud has no vms.csv there: a fallback).
    catalog_version: str | None = pa.Field(nullable=True, str_matches=r"^v\d+$")
    catalog_fallback: bool | None = pa.Field(nullable=True)
    # Added when a fetch is staged: when it was fetched, and which snapshot (`<provider>-<day>`) it is.
    fetched_at: Annotated[pl.Datetime, "us", "UTC"] | None = pa.Field(nullable=True)
    snapshot: str | None = pa.Field(nullable=True)

    @pa.dataframe_check(error="price_per_accelerator_hour_usd != price_per_hour_usd / accelerators_per_instance")
    def per_accelerator_price_consistent(cls, data: pa.PolarsData) -> pl.LazyFrame:
        expected = pl.col("price_per_hour_usd") / pl.col("accelerators_per_instance")
        return data.lazyframe.select((pl.col("price_per_accelerator_hour_usd") - expected).abs() < 1e-9)

    class Config:
        strict = False  # callers add columns freely (fetched_at, snapshot ids, ...)


class AzureRetailItem(pa.DataFrameModel):
    """Fields of a Retail Prices API item that the parser reads."""
    currencyCode: pe.String
    retailPrice: pe.Float64 = pa.Field(coerce=True)
    armRegionName: pe.String
    armSkuName: pe.String = pa.Field(nullable=True)
    meterName: pe.String
    productName: pe.String
    unitOfMeasure: pe.String
    type: pe.String

    class Config:
        strict = False


class OciPriceItem(pa.DataFrameModel):
    """Fields of an OCI price list item (before the currency localizations are unnested)."""
    partNumber: pe.String
    displayName: pe.String
    metricName: pe.String
    serviceCategory: pe.String

    class Config:
        strict = False


class AcceleratorRow(pa.DataFrameModel):
    accelerator: pe.String = pa.Field(unique=True, str_matches=r"^[a-z0-9][a-z0-9-]*$")
    vendor: pe.String
    model: pe.String
    memory_gb: pe.Float64 = pa.Field(nullable=True, gt=0, coerce=True)
    peak_dense_bf16_flops: pe.Float64 = pa.Field(nullable=True, gt=1e12, lt=1e17, coerce=True)
    flops_source: pe.String = pa.Field(str_length={"min_value": 1})
    peak_dense_fp8_flops: pe.Float64 = pa.Field(nullable=True, gt=1e12, lt=1e17, coerce=True)
    peak_dense_fp4_flops: pe.Float64 = pa.Field(nullable=True, gt=1e12, lt=1e17, coerce=True)

    @pa.dataframe_check
    def every_peak_has_a_source(cls, data) -> pl.LazyFrame:
        """An FP8 or FP4 peak says where it comes from."""
        return data.lazyframe.select(
            (pl.col("peak_dense_fp8_flops").is_null() | (pl.col("fp8_flops_source").fill_null("") != ""))
            & (pl.col("peak_dense_fp4_flops").is_null() | (pl.col("fp4_flops_source").fill_null("") != "")))

    class Config:
        strict = False


class AcceleratorAliasRow(pa.DataFrameModel):
    accelerator: pe.String = pa.Field(nullable=True)
    alias_kind: pe.String = pa.Field(isin=["mlperf_name", "mlperf_system_name", "cloud_sku"])
    pattern: pe.String
    match: pe.String = pa.Field(isin=["exact", "regex"])

    class Config:
        strict = False
