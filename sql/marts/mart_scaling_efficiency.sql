-- model: mart_scaling_efficiency
-- kind: table
-- grain: round, submitter, benchmark, accelerator, division, framework_family, system
-- depends on: fct_training_result, fct_training_run, dim_system
-- description: Scaling of each family across accelerator counts, relative to the family's base.
-- Scaling of each family across accelerator counts, relative to the family's base: its smallest
-- accelerator_count; ties broken by the lowest (fastest) score, then by system name.
-- A family compares like with like: same round, submitter, benchmark, accelerator, division and
-- framework family (`framework_family`, defined once below). A result with no division is a
-- family of its own. Rows of the base's size are not scaling rows (`is_scaling_pair` false, no
-- speedup or efficiency except the base's own 1).
--   speedup                        = base score / score (official time-to-train, minutes)
--   convergence_scaling_efficiency = speedup / size_ratio
--   relative_throughput            = mean steady-state throughput / base's (dim_benchmark's unit)
--   weak_scaling_efficiency        = relative_throughput / size_ratio
--   scaling_kind                   = weak (global batch grows with the system), strong (same batch),
--                                    batch_shrinks; NULL when a batch size is unknown
-- Runs whose steady-state ÷ end-to-end throughput fails its check (fct_training_run
-- .throughput_check_reason) are left out of the mean throughput; `throughput_exclusion` says so.
-- `accelerator` is the dim_system accelerator key, else the declared accelerator model name.
-- Carried-over results (fct_training_result.carried_over_from) are left out: not scaling evidence of
-- this round.
with framework_patterns (framework_family, pattern) as (
    -- The framework family: NeMo, Megatron, DeepSpeed, Composer run on PyTorch, so
    -- "PyTorch NVIDIA Release 24.09" and "NeMo + PyTorch" are one family. Matched on the system
    -- folder name first (it names the framework of multi-framework system descriptions), then on
    -- the system description's framework; several families there and none in the name: "mixed".
    values
        ('pytorch', 'pytorch|torch|nemo|megatron|deepspeed|composer'),
        ('mxnet', 'mxnet'),
        ('tensorflow', 'tensorflow|(^|[^a-z])tf([^a-z]|$)'),
        ('jax', 'jax|maxtext|maxdiffusion|(^|[^a-z])pax([^a-z]|$)'),
        ('hugectr', 'hugectr|merlin'),
        ('dgl', '(^|[^a-z])dgl([^a-z]|$)'),
        ('mindspore', 'mindspore'),
        ('paddle', 'paddle'),
        ('tinygrad', 'tinygrad'),
        ('poplar', 'popart|poplar'),
        ('llmboost', 'llmboost')
),

system_frameworks as (
    select
        s.round,
        s.submitter,
        s.system,
        list_sort(list_distinct(list(p.framework_family) filter (
            where regexp_matches(lower(s.system), p.pattern)))) as in_name,
        list_sort(list_distinct(list(p.framework_family) filter (
            where regexp_matches(lower(coalesce(s.framework, '')), p.pattern)))) as in_description,
        any_value(s.framework) as framework
    from dim_system as s
    cross join framework_patterns as p
    group by all
),

system_family as (
    select
        round,
        submitter,
        system,
        case
            when len(in_name) = 1 then in_name[1]
            when len(in_description) = 1 then in_description[1]
            when len(in_description) > 1 then 'mixed(' || array_to_string(in_description, ',') || ')'
            else coalesce(nullif(lower(trim(framework)), ''), 'unknown')
        end as framework_family
    from system_frameworks
),

throughput as (
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
        r.benchmark,
        coalesce(s.accelerator, r.accelerator_model_name) as accelerator,
        s.accelerator is not null as accelerator_is_canonical,
        r.division,
        coalesce(f.framework_family, 'unknown') as framework_family,
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
    left join system_family as f using (round, submitter, system)
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
            then (throughput / base_throughput) / size_ratio end as weak_scaling_efficiency,
        case
            when not is_scaling_pair or global_batch_size is null or base_global_batch_size is null then null
            when global_batch_size > base_global_batch_size then 'weak'
            when global_batch_size = base_global_batch_size then 'strong'
            else 'batch_shrinks'
        end as scaling_kind
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
    relative_throughput,
    weak_scaling_efficiency,
    is_base,
    family_size,
    framework_family,
    is_scaling_pair,
    base_global_batch_size,
    global_batch_size,
    scaling_kind,
    throughput_exclusion,
    -- a stated cause for a weak scaling efficiency outside [0.30, 1.10]
    case
        when weak_scaling_efficiency is null or weak_scaling_efficiency between 0.30 and 1.10 then null
        when global_batch_size is null or base_global_batch_size is null
            then 'cause unknown: the logs do not state both global batch sizes'
        when global_batch_size / accelerator_count > base_global_batch_size / base_accelerator_count
            then 'per-accelerator batch grows ' || round(
                (global_batch_size / accelerator_count) / (base_global_batch_size / base_accelerator_count), 2)
                || '× over the base: more work per step per accelerator'
        when global_batch_size / accelerator_count < base_global_batch_size / base_accelerator_count
            then 'per-accelerator batch shrinks to ' || round(
                (global_batch_size / accelerator_count) / (base_global_batch_size / base_accelerator_count), 2)
                || '× of the base: less work per step per accelerator'
        else 'cause unknown: same per-accelerator batch as the base'
    end as weak_scaling_flag
from measured
