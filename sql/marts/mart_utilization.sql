-- model: mart_utilization
-- kind: table
-- grain: round, submitter, system, benchmark
-- depends on: fct_training_result, fct_training_run, dim_system, dim_accelerator, dim_benchmark
-- description: Model FLOPs utilization of each official result, against the peak of its precision.
-- Model FLOPs utilization of each official result (grain: round, submitter, system, benchmark):
--   samples to converge × model FLOPs per sample
--     / (time-to-train × accelerators × peak dense FLOP/s in the result's training precision)
-- averaged over the runs in the official olympic mean (mean samples over mean time). Time-to-train
-- is run_start → run_stop, so evaluation time is included (end-to-end MFU).
-- Inputs: fct_training_result, fct_training_run (precision_logged), dim_system (accelerator,
-- precision_stated), dim_accelerator (dense BF16/FP8 peaks), dim_benchmark (FLOPs per unit).
-- Precision: what the scored runs' logs state (the most common format among them, e.g. NeMo's
-- `fp8: true`), else what the systems file states, else BF16 (`precision_source` says which).
-- FP16 runs use the BF16 peak (the same dense tensor rate on every chip here that has both).
-- A result stating nothing whose achieved FLOP/s exceed the dense BF16 peak is measured against the
-- FP8 peak (`precision_source` 'implied_by_throughput', with the figures as evidence).
-- `mfu_null_reason` says why `mfu` is NULL. MFU above 1 fails the `mfu_at_most_one` check.
with runs as (
    select
        round, submitter, system, benchmark,
        avg(samples_to_converge) as samples_to_converge,
        avg(time_to_train_minutes) as time_to_train_minutes,
        count(*) as runs_in_mean
    from fct_training_run
    where in_olympic_mean
    group by all
),

formats_in_logs as (
    select
        round, submitter, system, benchmark, precision_logged,
        count(*) as runs_stating,
        min(run_file || ': ' || precision_evidence) as evidence
    from fct_training_run
    where scored and precision_logged is not null
    group by all
),

logged as (
    -- the format most scored runs state (ties: the narrower format, so MFU is never inflated)
    select
        round, submitter, system, benchmark,
        arg_max(precision_logged, runs_stating * 10 + case precision_logged
            when 'fp4' then 4 when 'fp8' then 3 when 'bf16' then 2 else 1 end) as precision,
        arg_max(evidence, runs_stating * 10 + case precision_logged
            when 'fp4' then 4 when 'fp8' then 3 when 'bf16' then 2 else 1 end) as evidence
    from formats_in_logs
    group by all
),

results as (
    select
        r.*,
        s.accelerator,
        coalesce(l.precision, s.precision_stated, 'bf16') as precision,
        case
            when l.precision is not null then 'log'
            when s.precision_stated is not null then 'system_description'
            else 'default_bf16'
        end as precision_source,
        coalesce(l.evidence, s.precision_evidence) as precision_evidence
    from fct_training_result as r
    left join dim_system as s using (round, submitter, system)
    left join logged as l using (round, submitter, system, benchmark)
    where r.score_minutes is not null
),

measured as (
    select
        r.round,
        r.submitter,
        r.system,
        r.benchmark,
        r.division,
        r.accelerator,
        r.accelerator_count,
        a.peak_dense_bf16_flops,
        b.convergence_unit,
        b.model_flops_per_convergence_unit,
        b.flops_derivation,
        runs.runs_in_mean,
        runs.samples_to_converge,
        runs.time_to_train_minutes,
        r.score_minutes,
        r.precision,
        r.precision_source,
        r.precision_evidence,
        a.peak_dense_fp8_flops,
        case r.precision
            when 'fp8' then a.peak_dense_fp8_flops
            when 'fp4' then null  -- no FP4 peak in dim_accelerator yet
            else a.peak_dense_bf16_flops
        end as peak_flops_used
    from results as r
    left join dim_accelerator as a on a.accelerator = r.accelerator
    left join dim_benchmark as b on b.benchmark = r.benchmark
    left join runs
        on runs.round = r.round and runs.submitter = r.submitter and runs.system = r.system
        and runs.benchmark = r.benchmark
),

resolved as (
    -- A result that states no format yet computes faster than the dense BF16 peak cannot have
    -- trained in BF16: where the chip has an FP8 peak, it is measured against that, and says why.
    select
        * replace (
            case when implied_fp8 then 'fp8' else precision end as precision,
            case when implied_fp8 then 'implied_by_throughput' else precision_source end as precision_source,
            case when implied_fp8 then
                'achieved ' || printf('%.3g', achieved_flops) || ' FLOP/s per accelerator, above the dense BF16 peak '
                || printf('%.3g', peak_dense_bf16_flops) || ': not a BF16 run'
                else precision_evidence end as precision_evidence,
            case when implied_fp8 then peak_dense_fp8_flops else peak_flops_used end as peak_flops_used
        )
    from (
        select
            *,
            samples_to_converge * model_flops_per_convergence_unit
                / (time_to_train_minutes * 60.0 * accelerator_count) as achieved_flops,
            precision_source = 'default_bf16' and peak_dense_fp8_flops is not null
                and samples_to_converge * model_flops_per_convergence_unit
                    / (time_to_train_minutes * 60.0 * accelerator_count) > peak_dense_bf16_flops as implied_fp8
        from measured
    )
)

select
    round,
    submitter,
    system,
    benchmark,
    division,
    accelerator,
    accelerator_count,
    peak_dense_bf16_flops,
    convergence_unit,
    model_flops_per_convergence_unit,
    flops_derivation,
    runs_in_mean,
    samples_to_converge,
    time_to_train_minutes,
    score_minutes,
    samples_to_converge * model_flops_per_convergence_unit as model_flops_to_train,
    samples_to_converge * model_flops_per_convergence_unit
        / (time_to_train_minutes * 60.0 * accelerator_count) as achieved_flops_per_accelerator,
    samples_to_converge * model_flops_per_convergence_unit
        / (time_to_train_minutes * 60.0 * accelerator_count * peak_flops_used) as mfu,
    precision,
    precision_source,
    precision_evidence,
    peak_dense_fp8_flops,
    peak_flops_used,
    case
        when model_flops_per_convergence_unit is null then 'benchmark has no sound FLOPs figure (dim_benchmark)'
        when accelerator is null then 'accelerator not mapped (see the unmapped_accelerators check)'
        when samples_to_converge is null or time_to_train_minutes is null then 'no olympic-mean run with samples to converge'
        when accelerator_count is null then 'accelerator count unknown'
        when precision = 'fp4' then 'FP4 run: dim_accelerator has no FP4 peak'
        when peak_flops_used is null then 'no dense ' || upper(precision) || ' peak for ' || accelerator || ' in dim_accelerator'
    end as mfu_null_reason
from resolved
