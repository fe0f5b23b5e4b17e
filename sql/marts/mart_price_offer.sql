-- model: mart_price_offer
-- kind: table
-- grain: provider, sku, region, pricing_model
-- depends on: fct_cloud_price_current, raw_cloud_provider_seed
-- description: The current price offers of every accelerator a cost can use, one source each, with whether anyone can book them.
-- columns:
--   provider varchar
--   sku varchar
--   region varchar
--   pricing_model varchar
--   accelerator varchar: the dim_accelerator key the offer is for
--   accelerators_per_instance bigint
--   price_per_hour_usd double
--   price_per_accelerator_hour_usd double
--   effective_date date
--   fetched_at timestamp with time zone
--   source_url varchar
--   price_source varchar
--   provider_kind varchar: hyperscaler, neocloud, marketplace, or unknown for a provider cloud_providers.csv does not list (vocabulary provider_kind)
--   is_bookable boolean: a hyperscaler or neocloud lists it at a fixed rate, on demand or committed (the one definition of a headline price)
-- The one home of "which current price": mart_cost_to_train, its headline, the report, `compare` and
-- `prices` all read these offers.
-- Where a price came from (`price_source`): a provider's own API beats the curated list, which beats
-- the SkyPilot catalog, per provider, accelerator and pricing model; so a catalog row never replaces
-- an API row and no result is costed twice by one provider for one offer.
-- Catalog offers are collapsed to one per provider, accelerator, region and pricing model.
-- `is_bookable`: a hyperscaler or a neocloud lists it at a fixed rate, on demand or committed;
-- marketplaces (auctions, resale) and spot capacity are market prices, snapshots nobody can book.
-- `provider_kind` is 'unknown' for a provider the seed does not know (a cloud new in the catalog, read and
-- flagged until a reviewed row says what it is): not bookable either.
with current_prices as (
    select *
    from fct_cloud_price_current
    where price_per_accelerator_hour_usd > 0
        and accelerator is not null
    -- one row per price key even if the input holds older rows of the same key
    qualify row_number() over (
        partition by provider, sku, region, pricing_model, price_source
        order by effective_date desc nulls last, fetched_at desc nulls last, price_per_accelerator_hour_usd
    ) = 1
),

-- The catalog lists one offer per instance size and zone (TPU v5p: 564 slice rows of one per-chip
-- price): one catalog offer per provider, accelerator, region and pricing model, the cheapest
-- accelerator-hour (ties: the largest instance, then the SKU name).
catalog_collapsed as (
    select *
    from current_prices
    qualify price_source <> 'catalog' or row_number() over (
        partition by provider, accelerator, region, pricing_model, price_source
        order by price_per_accelerator_hour_usd, accelerators_per_instance desc, sku
    ) = 1
),

best_source as (
    select *
    from catalog_collapsed
    qualify dense_rank() over (
        partition by provider, accelerator, pricing_model
        order by case price_source when 'api' then 1 when 'list' then 2 else 3 end
    ) = 1
),

-- hyperscaler, neocloud or marketplace (resellers and auctions, whose prices are market snapshots)
provider_kinds as (
    select lower(trim(provider)) as provider, any_value(kind) as kind
    from raw_cloud_provider_seed
    group by 1
)

select
    p.provider,
    p.sku,
    p.region,
    p.pricing_model,
    p.accelerator,
    p.accelerators_per_instance,
    p.price_per_hour_usd,
    p.price_per_accelerator_hour_usd,
    p.effective_date,
    p.fetched_at,
    p.source_url,
    p.price_source,
    coalesce(k.kind, 'unknown') as provider_kind,
    coalesce(k.kind in ('hyperscaler', 'neocloud') and p.pricing_model <> 'spot', false) as is_bookable
from best_source as p
left join provider_kinds as k on k.provider = lower(p.provider)
