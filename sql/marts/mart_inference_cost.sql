-- model: mart_inference_cost
-- kind: table
-- grain: round, location
-- depends on: fct_inference_result, int_accelerator_offer, int_build_parameters
-- description: What a million tokens, samples or queries cost on each valid Inference result's system at today's cheapest bookable price.
-- columns:
--   suite varchar: always 'inference'
--   round varchar: the Inference round
--   division varchar: closed, open or network
--   submitter varchar: the submitting organization's folder
--   system varchar: the systems file's stem
--   system_name varchar: the system's name in the systems file
--   model varchar: the model as MLCommons' table names it
--   scenario varchar: Offline, Server or Interactive (latency scenarios have no throughput to price)
--   location varchar: the scenario folder inside the archive (fct_inference_result.location)
--   accelerator varchar: the dim_accelerator key
--   accelerator_count bigint: accelerators of the system
--   performance_result double: the result's throughput
--   performance_units varchar: Tokens/s, Samples/s or Queries/s
--   unit varchar: what a million of is priced: tokens, samples or queries
--   performance_per_accelerator double: performance_result ÷ accelerator_count
--   ttft_limit_ms double: the time-to-first-token limit the result met (LLM Server, Interactive)
--   tpot_limit_ms double: the time-per-output-token limit the result met (LLM Server, Interactive)
--   system_usd_per_hour double: accelerator_count × the price per accelerator-hour: the system's hourly price, USD
--   usd_per_million double: USD per million units: system_usd_per_hour ÷ (performance_result × 3,600) × 10^6
--   price_per_accelerator_hour_usd double: the cheapest bookable price per accelerator-hour of the accelerator, USD
--   provider varchar: the provider of that price
--   region varchar: the region of that price
--   pricing_model varchar: the pricing model of that price (vocabulary pricing_model)
--   sku varchar: the SKU of that price
--   price_source varchar: api, list or catalog (mart_price_offer)
--   source_url varchar: where that price was read
--   market_usd_per_million double: the same at the cheapest market price (marketplaces and spot: snapshots nobody can book)
--   market_provider varchar: the provider of that market price
--   power_per_accelerator_w double: the system's audited average power per accelerator, W (power results)
--   joules_per_unit double: joules per token, sample or query at that power (fct_inference_result)
--   kwh_per_million double: energy of a million units: joules_per_unit × 10^6 ÷ 3.6 × 10^6
--   facility_kwh_per_million double: kwh_per_million × pue (the facility's cooling and conversion)
--   energy_usd_per_million double: facility_kwh_per_million × electricity_usd_per_kwh (NULL without a price)
--   pue double: the PUE applied (raw_build_parameters)
--   electricity_usd_per_kwh double: the electricity price applied (MLPERF_ELECTRICITY_USD_PER_KWH; NULL: not set)
--   rank_in_model_scenario bigint: 1 for the cheapest valid result of its round, division, model and scenario by usd_per_million
--   plausibility_flag varchar: why usd_per_million is outside what is plausible ($0.001–$100 per million tokens), else NULL
--   no_cost_reason varchar: why there is no usd_per_million (a latency result, CPU-only, unmapped accelerator, no bookable price)
-- The system of an audited result rented at a cloud's current price for the same accelerators: a
-- buyer's view, the headline rule of the Training cost view (mart_price_offer.is_bookable: hyperscaler or
-- neocloud list/API prices, on demand or committed; market prices beside, never the headline). On-premise
-- systems are priced at cloud rates for the same accelerators; host CPUs, memory and network are not priced.
with results as (
    select
        *,
        case performance_units when 'Tokens/s' then 'tokens' when 'Samples/s' then 'samples'
            when 'Queries/s' then 'queries' end as unit
    from fct_inference_result
    where valid
),

priced as (
    select
        r.*,
        b.price_per_accelerator_hour_usd,
        b.provider,
        b.region,
        b.pricing_model,
        b.sku,
        b.price_source,
        b.source_url,
        r.accelerator_count * b.price_per_accelerator_hour_usd as system_usd_per_hour,
        case when r.unit is not null and r.accelerator_count > 0 then
            r.accelerator_count * b.price_per_accelerator_hour_usd / (r.performance_result * 3600.0) * 1e6
        end as usd_per_million,
        case when r.unit is not null and r.accelerator_count > 0 then
            r.accelerator_count * m.price_per_accelerator_hour_usd / (r.performance_result * 3600.0) * 1e6
        end as market_usd_per_million,
        m.provider as market_provider
    from results as r
    left join int_accelerator_offer as b on b.accelerator = r.accelerator and b.is_bookable
    left join int_accelerator_offer as m on m.accelerator = r.accelerator and not m.is_bookable
)

select
    'inference' as suite,
    round,
    division,
    submitter,
    system,
    system_name,
    model,
    scenario,
    location,
    accelerator,
    accelerator_count,
    performance_result,
    performance_units,
    unit,
    performance_per_accelerator,
    ttft_limit_ms,
    tpot_limit_ms,
    system_usd_per_hour,
    usd_per_million,
    price_per_accelerator_hour_usd,
    provider,
    region,
    pricing_model,
    sku,
    price_source,
    source_url,
    market_usd_per_million,
    market_provider,
    power_per_accelerator_w,
    joules_per_unit,
    joules_per_unit * 1e6 / 3.6e6 as kwh_per_million,
    joules_per_unit * 1e6 / 3.6e6 * parameters.pue as facility_kwh_per_million,
    joules_per_unit * 1e6 / 3.6e6 * parameters.pue * parameters.electricity_usd_per_kwh as energy_usd_per_million,
    parameters.pue,
    parameters.electricity_usd_per_kwh,
    case when usd_per_million is not null then
        rank() over (partition by round, division, model, scenario order by usd_per_million)
    end as rank_in_model_scenario,
    case
        when unit = 'tokens' and (usd_per_million < 0.001 or usd_per_million > 100)
            then 'outside $0.001–$100 per million tokens: check the price row and the result'
    end as plausibility_flag,
    case
        when usd_per_million is not null then null
        when unit is null then 'a latency result (' || scenario || '): no throughput to price'
        when coalesce(accelerator_count, 0) = 0 then 'a CPU-only system (or no accelerator count): no accelerator price applies'
        when accelerator is null and accelerator_model_name like '%(x%,%'
            then 'a system of several accelerator kinds (' || accelerator_model_name || '): not priced as one'
        when accelerator is null then 'accelerator not mapped to a dim_accelerator key'
        when market_usd_per_million is not null then 'only market prices (marketplace or spot) for ' || accelerator
        else 'no current bookable price for ' || accelerator
    end as no_cost_reason
from priced
cross join int_build_parameters as parameters
