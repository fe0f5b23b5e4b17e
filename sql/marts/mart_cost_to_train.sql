-- model: mart_cost_to_train
-- kind: table
-- grain: round, submitter, system, benchmark, provider, sku, region, pricing_model
-- depends on: fct_training_result, dim_system, mart_price_offer, int_submitter_cloud
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
--   is_bookable boolean: anyone can book the offer at this rate (mart_price_offer.is_bookable)
-- What one official training run costs at each current price option of the system's accelerator:
-- score (hours) × accelerator count × price per accelerator-hour. The offers, their source precedence
-- and `is_bookable` (the one definition of a headline price) are mart_price_offer's.
-- `is_native_cloud`: the submitter is the price's cloud (the rule is int_submitter_cloud).
-- `perf_per_dollar` is trainings per USD.
with results as (
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
    p.provider_kind,
    p.is_bookable
from results as r
join mart_price_offer as p on p.accelerator = r.accelerator
