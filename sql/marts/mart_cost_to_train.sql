-- What one official training run costs at each current price option of the system's accelerator:
-- score (hours) × accelerator count × price per accelerator-hour. One row per result and price
-- option (provider, sku, region, pricing_model); `perf_per_dollar` is trainings per USD.
-- `is_native_cloud`: the submitter is the price's cloud (Google on gcp, Microsoft/Azure on azure,
-- Oracle on oci, Amazon/AWS on aws; otherwise the provider's name appears in the submitter's).
-- SkyPilot cross-check rows (provider `skypilot-<cloud>`) are left out.
with prices as (
    select *
    from fct_cloud_price_current
    where price_per_accelerator_hour_usd > 0
        and accelerator is not null
        -- SkyPilot catalog rows are a cross-check of the providers' own prices, not a price option
        and provider not like 'skypilot-%'
    qualify row_number() over (
        partition by provider, sku, region, pricing_model, accelerator
        order by effective_date desc nulls last, fetched_at desc nulls last, price_per_accelerator_hour_usd
    ) = 1
),

results as (
    select r.round, r.submitter, r.system, s.system_name, r.benchmark, r.division, r.availability,
        s.accelerator, r.accelerator_count, r.score_minutes
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
    case lower(p.provider)
        when 'gcp' then lower(r.submitter) like '%google%'
        when 'azure' then lower(r.submitter) like '%microsoft%' or lower(r.submitter) like '%azure%'
        when 'oci' then lower(r.submitter) like '%oracle%'
        when 'aws' then lower(r.submitter) like '%amazon%' or lower(r.submitter) like '%aws%'
        else lower(r.submitter) like '%' || lower(p.provider) || '%'
    end as is_native_cloud,
    p.effective_date,
    p.fetched_at,
    p.source_url
from results as r
join prices as p on p.accelerator = r.accelerator
