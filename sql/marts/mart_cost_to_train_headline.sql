-- model: mart_cost_to_train_headline
-- kind: table
-- grain: round, submitter, system, benchmark
-- depends on: fct_training_result, dim_system, mart_cost_to_train, int_accelerator_offer
-- description: One row per scored result: its cheapest bookable cost to train, and the cheapest market price beside it.
-- columns:
--   round varchar
--   submitter varchar
--   organization varchar
--   system varchar
--   system_name varchar
--   benchmark varchar
--   division varchar
--   accelerator varchar
--   accelerator_count bigint
--   score_minutes double
--   accelerator_hours double: score hours × accelerator_count
--   cost_to_train_usd double: the cheapest bookable cost to train, USD (NULL: no bookable price; no_cost_reason says why)
--   perf_per_dollar double: trainings per USD at that cost
--   price_per_accelerator_hour_usd double: the price per accelerator-hour that cost uses, USD
--   provider varchar: the provider of that price
--   provider_kind varchar
--   region varchar: the region of that price
--   pricing_model varchar: the pricing model of that price (vocabulary pricing_model)
--   sku varchar: the SKU of that price
--   price_source varchar
--   is_native_cloud boolean
--   effective_date date
--   source_url varchar
--   marketplace_cost_to_train_usd double: the cheapest market cost (marketplaces and spot capacity), USD: a snapshot nobody can book
--   marketplace_price_per_accelerator_hour_usd double: the price per accelerator-hour of that market option
--   marketplace_provider varchar: the provider of that market price
--   marketplace_provider_kind varchar: marketplace, or the kind of a provider whose spot price it is
--   marketplace_region varchar: the region of that market price
--   marketplace_pricing_model varchar: the pricing model of that market price (spot for spot capacity)
--   no_cost_reason varchar: why there is no bookable cost (no accelerator key, no count, no bookable price for the accelerator)
-- The headline cost of each scored result (what the report and the site show). A price is
-- *bookable* when a hyperscaler or a neocloud lists it at a fixed rate: on demand, or committed
-- (reserved, savings plan, committed use): mart_cost_to_train.is_bookable, its one definition.
-- Everything else is a *market* price: marketplaces (auctions, resale) and spot capacity anywhere,
-- whose prices are snapshots nobody can book. So `min(cost_to_train_usd)` here is a price anyone
-- can book; the market figure sits beside it.
with cheapest as (
    -- each result's cost at its accelerator's cheapest bookable and cheapest market offer: the offers
    -- int_accelerator_offer picks (the one home of "the cheapest"; a result's cost is its price × its
    -- accelerator-hours, so the cheapest price is its cheapest cost)
    select c.*
    from mart_cost_to_train as c
    join int_accelerator_offer as o
        on o.accelerator = c.accelerator and o.is_bookable = c.is_bookable and o.provider = c.provider
        and o.sku = c.sku and o.region is not distinct from c.region and o.pricing_model = c.pricing_model
),

bookable as (select * from cheapest where is_bookable),

market as (select * from cheapest where not is_bookable)

select
    r.round,
    r.submitter,
    s.organization,
    r.system,
    s.system_name,
    r.benchmark,
    r.division,
    s.accelerator,
    r.accelerator_count,
    r.score_minutes,
    r.score_minutes / 60.0 * r.accelerator_count as accelerator_hours,
    b.cost_to_train_usd,
    b.perf_per_dollar,
    b.price_per_accelerator_hour_usd,
    b.provider,
    b.provider_kind,
    b.region,
    b.pricing_model,
    b.sku,
    b.price_source,
    b.is_native_cloud,
    b.effective_date,
    b.source_url,
    m.cost_to_train_usd as marketplace_cost_to_train_usd,
    m.price_per_accelerator_hour_usd as marketplace_price_per_accelerator_hour_usd,
    m.provider as marketplace_provider,
    m.provider_kind as marketplace_provider_kind,
    m.region as marketplace_region,
    m.pricing_model as marketplace_pricing_model,
    case
        when b.cost_to_train_usd is not null then null
        when s.accelerator is null then 'accelerator not mapped to a dim_accelerator key'
        when coalesce(r.accelerator_count, 0) = 0 then 'accelerator count unknown'
        when m.cost_to_train_usd is not null then 'only market prices (marketplace or spot) for ' || s.accelerator
        else 'no current price for ' || s.accelerator
    end as no_cost_reason
from fct_training_result as r
left join dim_system as s using (round, submitter, system)
left join bookable as b using (round, submitter, system, benchmark)
left join market as m using (round, submitter, system, benchmark)
where r.score_minutes is not null
