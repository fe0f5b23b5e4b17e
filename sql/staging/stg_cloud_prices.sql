-- model: stg_cloud_prices
-- kind: view
-- grain: none: a price list can repeat a key within a snapshot; fct_cloud_price_current is keyed
-- depends on: raw_cloud_prices
-- description: Every fetched price snapshot, typed, one provider name per cloud.
-- Every fetched price snapshot, typed. Grain: one row per price key and snapshot.
-- raw_cloud_prices: one staged file per price source and fetch day.
-- Snapshots staged before `price_source` (or `catalog_version`, `catalog_fallback`) existed lack the
-- column (union by name fills NULL):
-- those rows are read as the provider API's, except the curated `gcp-list` rows, which are Google
-- list prices (provider `gcp`, price_source `list`): one provider name per cloud.
with typed as (
    select * from raw_cloud_prices
    union all by name
    select null::varchar as price_source, null::varchar as catalog_version, null::boolean as catalog_fallback
    where false
)

select
    case when provider = 'gcp-list' then 'gcp' else provider end as provider,
    sku,
    region,
    pricing_model,
    accelerator,
    accelerators_per_instance,
    price_per_hour_usd,
    price_per_accelerator_hour_usd,
    effective_date,
    fetched_at,
    snapshot,
    currency,
    unit,
    source_url,
    raw_ref,
    coalesce(price_source, case when provider like '%-list' then 'list' else 'api' end) as price_source,
    catalog_version,
    catalog_fallback
from typed
