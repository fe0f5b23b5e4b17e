-- Every fetched price snapshot, typed.
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
    snapshot,
    currency,
    unit,
    source_url,
    raw_ref
from raw_cloud_prices
