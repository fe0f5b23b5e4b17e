-- model: fct_cloud_price_current
-- kind: view
-- grain: provider, sku, region, pricing_model, price_source
-- depends on: fct_cloud_price
-- description: The latest snapshot of each price key.
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
