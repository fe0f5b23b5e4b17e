-- model: fct_cloud_price_current
-- kind: view
-- grain: provider, sku, region, pricing_model, price_source
-- depends on: fct_cloud_price
-- description: The latest snapshot of each price key.
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
-- The latest snapshot of each price key (provider, sku, region, pricing_model, price_source).
select * exclude (latest_rank)
from (
    select
        *,
        row_number() over (
            partition by provider, sku, region, pricing_model, price_source
            order by fetched_at desc, effective_date desc nulls last, raw_ref
        ) as latest_rank
    from fct_cloud_price
)
where latest_rank = 1
