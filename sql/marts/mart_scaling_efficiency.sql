-- model: mart_scaling_efficiency
-- kind: table
-- grain: round, submitter, benchmark, accelerator, division, framework_family, system
-- depends on: fct_training_result, fct_training_run, dim_system
-- description: Scaling of each family across accelerator counts, relative to the family's base.
-- columns:
--   round varchar
--   submitter varchar
--   benchmark varchar
--   accelerator varchar: the dim_system accelerator key, else the declared accelerator model name
--   accelerator_is_canonical boolean: accelerator is a dim_accelerator key (not a declared name)
--   division varchar
--   base_system varchar: the family's base: its smallest system (ties: the fastest score, then the name)
--   system varchar
--   system_name varchar
--   base_accelerator_count bigint: the base's accelerator count
--   accelerator_count bigint
--   size_ratio double: accelerator_count ÷ base_accelerator_count
--   base_score_minutes double: the base's official score, minutes
--   score_minutes double
--   speedup double: base_score_minutes ÷ score_minutes
--   convergence_scaling_efficiency double: speedup ÷ size_ratio: how much of the added hardware became a shorter time to train
--   base_throughput double: the base's mean steady-state throughput, samples/s
--   throughput double: this system's mean steady-state throughput over the runs that pass the throughput check, samples/s
--   throughput_unit varchar
--   relative_throughput double: throughput ÷ base_throughput
--   weak_scaling_efficiency double: throughput_scaling_efficiency of weak pairs only (NULL for other kinds)
--   is_base boolean: this row is the family's base
--   family_size bigint: results in the family
--   framework_family varchar
--   is_scaling_pair boolean: a larger system than the base (rows of the base's size are not scaling rows)
--   base_global_batch_size double: the base's mean global batch size
--   global_batch_size double: this system's mean global batch size
--   scaling_kind varchar: weak, strong or mixed (vocabulary scaling_kind), from how the global batch grows with the size; NULL when a batch size is unknown
--   throughput_exclusion varchar: how many runs were left out of the mean throughput, and why
--   weak_scaling_flag varchar: why a throughput efficiency outside [0.30, 1.10] may be so (the per-accelerator batch ratio), or cause unknown
--   throughput_scaling_efficiency double: relative_throughput ÷ size_ratio, for every kind of pair
--   throughput_scaling_null_reason varchar: why the throughput efficiencies are NULL (e.g. above 2 with a per-accelerator batch that does not grow)
--   per_accelerator_batch_ratio double: (global_batch_size ÷ accelerator_count) ÷ the base's
--   organization varchar
-- Scaling of each family across accelerator counts, relative to the family's base: its smallest
-- accelerator_count; ties broken by the lowest (fastest) score, then by system name.
-- A family compares like with like: same round, submitter, benchmark, accelerator, division and
-- framework family (dim_system.framework_family). A result with no division is a
-- family of its own. Rows of the base's size are not scaling rows (`is_scaling_pair` false, no
-- speedup or efficiency except the base's own 1).
--   speedup                        = base score / score (official time-to-train, minutes)
--   convergence_scaling_efficiency = speedup / size_ratio
--   relative_throughput            = mean steady-state throughput / base's (samples per second)
--   throughput_scaling_efficiency  = relative_throughput / size_ratio, for every kind of pair
--   scaling_kind                   = weak: the global batch grows at least 0.9× the size ratio;
--                                    strong: it stays within 10 % of the base's; mixed: anything else;
--                                    NULL when a batch size is unknown (vocabulary `scaling_kind`)
--   weak_scaling_efficiency        = throughput_scaling_efficiency of weak pairs only (NULL otherwise)
--   weak_scaling_flag              = why a throughput efficiency outside [0.30, 1.10] may be so (the
--                                    name predates the scaling kinds): a per-accelerator batch that grows
--                                    (efficiency above) or shrinks (below) over the base's; a cause that
--                                    would move it the other way is never given
--   throughput_scaling_null_reason = why the throughput efficiencies are NULL: above 2 with a
--                                    per-accelerator batch that does not grow, the per-accelerator
--                                    throughput would have more than doubled with no more work per
--                                    step: no hardware does that, the two throughputs disagree on units
-- Runs whose steady-state ÷ end-to-end throughput fails its check (fct_training_run
-- .throughput_check_reason) are left out of the mean throughput; `throughput_exclusion` says so.
-- `accelerator` is the dim_system accelerator key, else the declared accelerator model name.
-- Carried-over results (fct_training_result.carried_over_from) are left out: not scaling evidence of
-- this round.
with throughput as (
    select
        round,
        submitter,
        system,
        benchmark,
        avg(steady_state_throughput) filter (where throughput_check_reason is null) as mean_throughput,
        min(throughput_unit) as throughput_unit,
        count(*) filter (where throughput_check_reason is null) as throughput_runs,
        count(*) filter (where throughput_check_reason is not null) as throughput_runs_excluded,
        min(throughput_check_reason) filter (where throughput_check_reason is not null) as first_exclusion_reason
    from fct_training_run
    where scored and steady_state_throughput > 0
    group by all
),

results as (
    select
        r.round,
        r.submitter,
        s.organization,
        r.benchmark,
        coalesce(s.accelerator, r.accelerator_model_name) as accelerator,
        s.accelerator is not null as accelerator_is_canonical,
        r.division,
        coalesce(s.framework_family, 'unknown') as framework_family,
        -- no division: a family of its own (never merged with another result)
        coalesce(r.division, 'no division: ' || r.system) as family_division,
        r.system,
        s.system_name,
        r.accelerator_count,
        r.score_minutes,
        r.global_batch_size,
        t.mean_throughput as throughput,
        case when t.mean_throughput is not null then t.throughput_unit end as throughput_unit,
        case when t.throughput_runs_excluded > 0 then
            t.throughput_runs_excluded || ' of ' || (t.throughput_runs + t.throughput_runs_excluded)
            || ' runs left out: ' || t.first_exclusion_reason
        end as throughput_exclusion
    from fct_training_result as r
    left join dim_system as s using (round, submitter, system)
    left join throughput as t using (round, submitter, system, benchmark)
    where r.score_minutes > 0
        and r.accelerator_count > 0
        and coalesce(s.accelerator, r.accelerator_model_name) is not null
        -- runs that all appeared in an earlier round are that round's evidence, not this one's
        and r.carried_over_from is null
),

ranked as (
    select
        *,
        row_number() over family_order as family_rank,
        count(*) over family as family_size
    from results
    window
        family as (partition by round, submitter, benchmark, accelerator, family_division, framework_family),
        family_order as (
            partition by round, submitter, benchmark, accelerator, family_division, framework_family
            order by accelerator_count, score_minutes, system
        )
),

base as (
    select * from ranked where family_rank = 1
),

pairs as (
    select
        r.*,
        b.system as base_system,
        b.accelerator_count as base_accelerator_count,
        b.score_minutes as base_score_minutes,
        b.throughput as base_throughput,
        b.throughput_unit as base_throughput_unit,
        b.global_batch_size as base_global_batch_size,
        r.family_rank = 1 as is_base,
        r.accelerator_count <> b.accelerator_count as is_scaling_pair,
        r.accelerator_count::double / b.accelerator_count as size_ratio
    from ranked as r
    join base as b
        on b.round = r.round
        and b.submitter = r.submitter
        and b.benchmark = r.benchmark
        and b.accelerator = r.accelerator
        and b.family_division = r.family_division
        and b.framework_family = r.framework_family
),

measured as (
    select
        *,
        case when is_scaling_pair or is_base then base_score_minutes / score_minutes end as speedup,
        case when is_scaling_pair or is_base then (base_score_minutes / score_minutes) / size_ratio end
            as convergence_scaling_efficiency,
        case when (is_scaling_pair or is_base) and throughput_unit = base_throughput_unit
            then throughput / base_throughput end as relative_throughput,
        case when (is_scaling_pair or is_base) and throughput_unit = base_throughput_unit
            then (throughput / base_throughput) / size_ratio end as throughput_scaling_efficiency,
        case
            when not is_scaling_pair or global_batch_size is null or base_global_batch_size is null then null
            when global_batch_size / base_global_batch_size >= 0.9 * size_ratio then 'weak'
            when abs(global_batch_size / base_global_batch_size - 1) <= 0.1 then 'strong'
            else 'mixed'
        end as scaling_kind,
        (global_batch_size / accelerator_count) / (base_global_batch_size / base_accelerator_count)
            as per_accelerator_batch_ratio
    from pairs
)

select
    round,
    submitter,
    benchmark,
    accelerator,
    accelerator_is_canonical,
    division,
    base_system,
    system,
    system_name,
    base_accelerator_count,
    accelerator_count,
    size_ratio,
    base_score_minutes,
    score_minutes,
    speedup,
    convergence_scaling_efficiency,
    base_throughput,
    case when throughput_unit = base_throughput_unit then throughput end as throughput,
    case when throughput_unit = base_throughput_unit then throughput_unit end as throughput_unit,
    case when throughput_scaling_null_reason is null then relative_throughput end as relative_throughput,
    case when (scaling_kind = 'weak' or is_base) and throughput_scaling_null_reason is null
        then throughput_scaling_efficiency end as weak_scaling_efficiency,
    is_base,
    family_size,
    framework_family,
    is_scaling_pair,
    base_global_batch_size,
    global_batch_size,
    scaling_kind,
    throughput_exclusion,
    -- a stated cause for a throughput efficiency outside [0.30, 1.10]: only one that moves it that way
    case
        when throughput_scaling_null_reason is not null or throughput_scaling_efficiency is null
            or throughput_scaling_efficiency between 0.30 and 1.10 then null
        when per_accelerator_batch_ratio is null
            then 'cause unknown: the logs do not state both global batch sizes'
        when throughput_scaling_efficiency > 1.10 and per_accelerator_batch_ratio > 1
            then 'per-accelerator batch grows ' || round(per_accelerator_batch_ratio, 2)
                || '× over the base: more work per step per accelerator'
        when throughput_scaling_efficiency < 0.30 and per_accelerator_batch_ratio < 1
            then 'per-accelerator batch shrinks to ' || round(per_accelerator_batch_ratio, 2)
                || '× of the base: less work per step per accelerator'
        else 'cause unknown: the per-accelerator batch (' || round(per_accelerator_batch_ratio, 2)
            || '× the base''s) does not explain an efficiency of ' || round(throughput_scaling_efficiency, 2)
    end as weak_scaling_flag,
    case when throughput_scaling_null_reason is null then throughput_scaling_efficiency end
        as throughput_scaling_efficiency,
    throughput_scaling_null_reason,
    per_accelerator_batch_ratio,
    organization
from (
    select
        *,
        case when throughput_scaling_efficiency > 2 and coalesce(per_accelerator_batch_ratio, 1) <= 1 then
            'throughput efficiency ' || round(throughput_scaling_efficiency, 2) || ' with a per-accelerator batch of '
            || coalesce(round(per_accelerator_batch_ratio, 2)::varchar, 'unknown') || '× the base''s: per-accelerator '
            || 'throughput cannot more than double without more work per step'
        end as throughput_scaling_null_reason
    from measured
)
