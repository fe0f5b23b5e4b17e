-- model: mart_cost_to_train_coverage
-- kind: table
-- grain: round, accelerator
-- depends on: fct_training_result, dim_system, mart_cost_to_train, fct_cloud_price_current
-- description: How many scored results have a cost to train, and why the rest have none.
-- columns:
--   round varchar
--   accelerator varchar: the dim_accelerator key; the declared model name when it maps to no key; '(no systems file)' when the systems file is missing or quarantined
--   accelerator_is_mapped boolean: the accelerator maps to a dim_accelerator key
--   has_system_file boolean: the results' systems files were read
--   scored_results bigint: scored results with this accelerator
--   costed_results bigint: of those, the results with at least one cost to train
--   uncosted_results bigint: the results with none
--   uncosted_systems varchar: submitter/system of every result left without a cost
--   cost_coverage double: costed_results ÷ scored_results
--   priced_by varchar: the providers and price sources that price this accelerator, e.g. gcp (catalog), oci (list)
--   no_cost_reason varchar: why results have no cost (no accelerator key, no systems file, no public price found)
--   sources_searched varchar: every provider and price source of the build: where a price was looked for
-- How many scored results have a cost to train, and why the rest have none.
-- `accelerator` is the dim_accelerator key; the declared model name when
-- the systems file's accelerator maps to no key; '(no systems file)' for results whose systems
-- description is missing or was quarantined).
-- `sources_searched` lists every price source of the current build (provider and price_source:
-- api = the provider's price API, list = curated published list price, catalog = SkyPilot catalog),
-- i.e. where a price was looked for; `priced_by` the ones that price this accelerator;
-- `uncosted_systems` the submitter/system of every result left without a cost.
with scored as (
    select r.round, r.submitter, r.system, r.benchmark, r.accelerator_count,
        s.accelerator, s.accelerator_model_name, s.system is not null as has_system_file
    from fct_training_result as r
    left join dim_system as s using (round, submitter, system)
    where r.score_minutes > 0
),

costed as (
    select distinct round, submitter, system, benchmark
    from mart_cost_to_train
),

offers as (
    select accelerator,
        string_agg(distinct provider || ' (' || price_source || ')', ', ' order by provider || ' (' || price_source || ')') as priced_by
    from fct_cloud_price_current
    where accelerator is not null and price_per_accelerator_hour_usd > 0
    group by accelerator
),

searched as (
    select coalesce(
        string_agg(distinct provider || ' (' || price_source || ')', ', ' order by provider || ' (' || price_source || ')'),
        'none: no price snapshot loaded'
    ) as sources_searched
    from fct_cloud_price_current
),

per_accelerator as (
    select
        s.round,
        case
            when not s.has_system_file then '(no systems file)'
            else coalesce(s.accelerator, s.accelerator_model_name, '(none declared)')
        end as accelerator,
        s.accelerator is not null as accelerator_is_mapped,
        s.has_system_file,
        count(*) as scored_results,
        count(c.round) as costed_results,
        count(*) filter (where c.round is null and s.accelerator is not null
            and coalesce(s.accelerator_count, 0) <= 0) as results_without_accelerator_count,
        string_agg(distinct s.submitter || '/' || s.system, ', ' order by s.submitter || '/' || s.system)
            filter (where c.round is null) as uncosted_systems
    from scored as s
    left join costed as c using (round, submitter, system, benchmark)
    group by all
)

select
    a.round,
    a.accelerator,
    a.accelerator_is_mapped,
    a.has_system_file,
    a.scored_results,
    a.costed_results,
    a.scored_results - a.costed_results as uncosted_results,
    a.uncosted_systems,
    a.costed_results / a.scored_results as cost_coverage,
    o.priced_by,
    case
        when a.costed_results = a.scored_results then null
        when not a.has_system_file then
            'no usable systems description (missing, or quarantined as not JSON): accelerator and count unknown'
        when not a.accelerator_is_mapped then
            'accelerator not mapped to a dim_accelerator key (CPU-only or unknown part): nothing to price'
        when o.priced_by is null then
            'no public price found for this accelerator; searched: ' || x.sources_searched
        when a.results_without_accelerator_count > 0 then
            'the systems file gives no accelerator count, so no cost can be computed'
        else 'priced, but these results were not costed'
    end as no_cost_reason,
    x.sources_searched
from per_accelerator as a
cross join searched as x
left join offers as o on o.accelerator = a.accelerator
