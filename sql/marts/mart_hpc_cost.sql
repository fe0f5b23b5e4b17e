-- model: mart_hpc_cost
-- kind: table
-- grain: round, submitter, system, benchmark
-- depends on: fct_hpc_result, int_accelerator_offer
-- description: What an MLPerf HPC strong run would cost at today's cheapest bookable price of its accelerator.
-- columns:
--   suite varchar: always 'hpc'
--   round varchar: the HPC round
--   submitter varchar: the submitting organization's folder
--   system varchar: the systems file's stem
--   benchmark varchar: cosmoflow, deepcam, oc20, openfold, ...
--   accelerator varchar: the dim_accelerator key
--   accelerator_count bigint: accelerators of the system
--   score_minutes double: the strong score, minutes
--   accelerator_hours double: score hours × accelerator_count
--   cost_to_train_usd double: accelerator_hours × the cheapest bookable price per accelerator-hour, USD (NULL: none; no_cost_reason says why)
--   price_per_accelerator_hour_usd double: that price, USD
--   provider varchar: the provider of that price
--   region varchar: the region of that price
--   pricing_model varchar: the pricing model of that price (vocabulary pricing_model)
--   sku varchar: the SKU of that price
--   no_cost_reason varchar: why there is no cost (CPU-only system, accelerator not mapped, no bookable price)
-- A renting buyer's view of a supercomputer result: the same accelerators for the same time at a cloud's
-- current bookable price (mart_price_offer.is_bookable: the one definition of a headline price). The
-- network, storage and CPU-only nodes of a supercomputer are not priced.
select
    'hpc' as suite,
    r.round,
    r.submitter,
    r.system,
    r.benchmark,
    r.accelerator,
    r.accelerator_count,
    r.score_minutes,
    r.score_minutes / 60.0 * r.accelerator_count as accelerator_hours,
    r.score_minutes / 60.0 * r.accelerator_count * p.price_per_accelerator_hour_usd as cost_to_train_usd,
    p.price_per_accelerator_hour_usd,
    p.provider,
    p.region,
    p.pricing_model,
    p.sku,
    case
        when p.price_per_accelerator_hour_usd is not null then null
        when coalesce(r.accelerator_count, 0) = 0 then 'a CPU-only system: no accelerator price applies'
        when r.accelerator is null then 'accelerator not mapped to a dim_accelerator key'
        else 'no current bookable price for ' || r.accelerator
    end as no_cost_reason
from fct_hpc_result as r
left join int_accelerator_offer as p on p.accelerator = r.accelerator and p.is_bookable
where r.scale = 'strong' and r.score_minutes is not null
