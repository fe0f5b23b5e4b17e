-- materialize: view
-- The latest snapshot of each price key.
select * exclude (latest_rank)
from (
    select
        *,
        row_number() over (
            partition by provider, sku, region, pricing_model
            order by fetched_at desc, effective_date desc nulls last, raw_ref
        ) as latest_rank
    from fct_cloud_price
)
where latest_rank = 1
