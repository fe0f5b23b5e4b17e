-- Scaling of each family = (round, submitter, benchmark, accelerator, division) across accelerator
-- counts, relative to the family's base: its smallest accelerator_count; ties broken by the lowest
-- (fastest) score, then by system name, so the base is deterministic.
--   speedup                        = base score / score (official time-to-train, minutes)
--   convergence_scaling_efficiency = speedup / size_ratio
--   relative_throughput            = mean steady-state throughput / base's (same unit only)
--   weak_scaling_efficiency        = relative_throughput / size_ratio
-- `accelerator` is the dim_system accelerator key, else the declared accelerator model name.
with throughput as (
    select
        round,
        submitter,
        system,
        benchmark,
        avg(steady_state_throughput) as mean_throughput,
        min(throughput_unit) as throughput_unit,
        count(distinct throughput_unit) as throughput_units,
        count(*) as throughput_runs
    from fct_training_run
    where scored and steady_state_throughput > 0
    group by all
),

results as (
    select
        r.round,
        r.submitter,
        r.benchmark,
        coalesce(s.accelerator, r.accelerator_model_name) as accelerator,
        s.accelerator is not null as accelerator_is_canonical,
        r.division,
        r.system,
        s.system_name,
        r.accelerator_count,
        r.score_minutes,
        case when t.throughput_units = 1 then t.mean_throughput end as throughput,
        case when t.throughput_units = 1 then t.throughput_unit end as throughput_unit
    from fct_training_result as r
    left join dim_system as s using (round, submitter, system)
    left join throughput as t using (round, submitter, system, benchmark)
    where r.score_minutes > 0
        and r.accelerator_count > 0
        and coalesce(s.accelerator, r.accelerator_model_name) is not null
),

ranked as (
    select
        *,
        row_number() over family_order as family_rank,
        count(*) over family as family_size
    from results
    window
        family as (partition by round, submitter, benchmark, accelerator, division),
        family_order as (
            partition by round, submitter, benchmark, accelerator, division
            order by accelerator_count, score_minutes, system
        )
),

base as (
    select * from ranked where family_rank = 1
)

select
    r.round,
    r.submitter,
    r.benchmark,
    r.accelerator,
    r.accelerator_is_canonical,
    r.division,
    b.system as base_system,
    r.system,
    r.system_name,
    b.accelerator_count as base_accelerator_count,
    r.accelerator_count,
    r.accelerator_count::double / b.accelerator_count as size_ratio,
    b.score_minutes as base_score_minutes,
    r.score_minutes,
    b.score_minutes / r.score_minutes as speedup,
    (b.score_minutes / r.score_minutes) / (r.accelerator_count::double / b.accelerator_count)
        as convergence_scaling_efficiency,
    b.throughput as base_throughput,
    case when r.throughput_unit = b.throughput_unit then r.throughput end as throughput,
    case when r.throughput_unit = b.throughput_unit then r.throughput_unit end as throughput_unit,
    case when r.throughput_unit = b.throughput_unit then r.throughput / b.throughput end as relative_throughput,
    case when r.throughput_unit = b.throughput_unit
        then (r.throughput / b.throughput) / (r.accelerator_count::double / b.accelerator_count)
    end as weak_scaling_efficiency,
    r.family_rank = 1 as is_base,
    r.family_size
from ranked as r
join base as b
    on b.round = r.round
    and b.submitter = r.submitter
    and b.benchmark = r.benchmark
    and b.accelerator = r.accelerator
    and b.division is not distinct from r.division
