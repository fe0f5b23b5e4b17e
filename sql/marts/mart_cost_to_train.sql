-- model: mart_cost_to_train
-- kind: table
-- grain: round, submitter, system, benchmark, provider, sku, region, pricing_model
-- depends on: fct_training_result, dim_system, fct_cloud_price_current, int_submitter_cloud, raw_cloud_provider_seed
-- description: What one official training run costs at each current price option of its accelerator.
-- columns:
--   round varchar
--   submitter varchar
--   system varchar
--   system_name varchar
--   benchmark varchar
--   division varchar
--   availability varchar
--   accelerator varchar
--   accelerator_count bigint
--   score_minutes double
--   provider varchar
--   sku varchar
--   region varchar
--   pricing_model varchar
--   accelerators_per_instance bigint
--   price_per_hour_usd double
--   price_per_accelerator_hour_usd double
--   cost_to_train_usd double: score hours × accelerator_count × price per accelerator-hour, USD: one official training run at this price
--   perf_per_dollar double: trainings per USD: 1 ÷ cost_to_train_usd
--   accelerator_hours double: score hours × accelerator_count
--   is_native_cloud boolean
--   effective_date date
--   fetched_at timestamp with time zone
--   source_url varchar
--   price_source varchar
--   availability_category varchar
--   provider_kind varchar
--   is_bookable boolean: a hyperscaler or neocloud lists it at a fixed rate, on demand or committed (the one definition of a headline price)
-- What one official training run costs at each current price option of the system's accelerator:
-- score (hours) × accelerator count × price per accelerator-hour.
-- Where a price came from (`price_source`): a provider's own API beats the curated list, which beats
-- the SkyPilot catalog, per provider, accelerator and pricing model; so a catalog row never replaces
-- an API row and no result is costed twice by one provider for one offer.
-- Catalog offers are collapsed to one per provider, accelerator, region and pricing model.
-- `is_native_cloud`: the submitter is the price's cloud (the rule is int_submitter_cloud).
-- `perf_per_dollar` is trainings per USD.
-- `is_bookable` (the one definition of a headline price): a hyperscaler or a neocloud lists it at a
-- fixed rate, on demand or committed; marketplaces (auctions, resale) and spot capacity are market
-- prices, snapshots nobody can book. `provider_kind` is NULL for a provider the seed does not know:
-- not bookable either.
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

prices as (
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
),

results as (
    select r.round, r.submitter, r.system, s.system_name, r.benchmark, r.division, r.availability,
        s.availability_category, s.accelerator, r.accelerator_count, r.score_minutes
    from fct_training_result as r
    join dim_system as s using (round, submitter, system)
    where r.score_minutes > 0 and r.accelerator_count > 0 and s.accelerator is not null
)

select
    r.round,
    r.submitter,
    r.system,
    r.system_name,
    r.benchmark,
    r.division,
    r.availability,
    r.accelerator,
    r.accelerator_count,
    r.score_minutes,
    p.provider,
    p.sku,
    p.region,
    p.pricing_model,
    p.accelerators_per_instance,
    p.price_per_hour_usd,
    p.price_per_accelerator_hour_usd,
    r.score_minutes / 60.0 * r.accelerator_count * p.price_per_accelerator_hour_usd as cost_to_train_usd,
    1.0 / (r.score_minutes / 60.0 * r.accelerator_count * p.price_per_accelerator_hour_usd) as perf_per_dollar,
    r.score_minutes / 60.0 * r.accelerator_count as accelerator_hours,
    exists (
        select 1 from int_submitter_cloud as n
        where n.provider = lower(p.provider) and n.submitter = r.submitter
    ) as is_native_cloud,
    p.effective_date,
    p.fetched_at,
    p.source_url,
    p.price_source,
    r.availability_category,
    k.kind as provider_kind,
    coalesce(k.kind in ('hyperscaler', 'neocloud') and p.pricing_model <> 'spot', false) as is_bookable
from results as r
join prices as p on p.accelerator = r.accelerator
left join provider_kinds as k on k.provider = lower(p.provider)
