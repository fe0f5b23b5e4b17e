-- model: fct_cloud_price
-- kind: table
-- grain: none: the price history as fetched; a source can list one key twice in a snapshot
-- depends on: stg_cloud_prices
-- description: Price history: one row per price key and snapshot.
-- columns:
--   provider varchar
--   sku varchar
--   region varchar
--   pricing_model varchar
--   accelerator varchar
--   accelerators_per_instance bigint
--   price_per_hour_usd double
--   price_per_accelerator_hour_usd double
--   effective_date date
--   fetched_at timestamp with time zone
--   source_url varchar
--   raw_ref varchar
--   snapshot varchar
--   price_source varchar
--   catalog_version varchar: the SkyPilot catalog version a catalog row was read from (NULL: not the catalog)
--   catalog_fallback boolean: the catalog row comes from an older version than the newest (its cloud has no vms.csv there)
-- Price history: one row per price key and snapshot. A key is (provider, sku, region,
-- pricing_model, price_source): a provider's API row and a catalog row for the same SKU are
-- separate prices, never one overwriting the other.
select
    provider,
    sku,
    region,
    pricing_model,
    accelerator,
    accelerators_per_instance,
    price_per_hour_usd,
    price_per_accelerator_hour_usd,
    effective_date,
    fetched_at,
    source_url,
    raw_ref,
    snapshot,
    price_source,
    catalog_version,
    catalog_fallback
from stg_cloud_prices
