-- model: mart_utilization
-- kind: table
-- grain: round, submitter, system, benchmark
-- depends on: fct_training_result, fct_training_run, dim_system, dim_accelerator, dim_benchmark
-- description: Model FLOPs utilization of each official result, against the peak of its precision.
-- columns:
--   round varchar
--   submitter varchar
--   system varchar
--   benchmark varchar
--   division varchar
--   accelerator varchar
--   accelerator_count bigint
--   peak_dense_bf16_flops double: the accelerator's dense BF16 peak, FLOP/s (dim_accelerator)
--   convergence_unit varchar: the unit the benchmark's logs count convergence in (dim_benchmark)
--   model_flops_per_convergence_unit double: model FLOPs per unit of convergence_unit (dim_benchmark)
--   flops_derivation varchar: how the FLOPs figure was derived (dim_benchmark)
--   runs_in_mean bigint: olympic-mean runs the figures average over
--   samples_to_converge double: mean samples to converge over those runs
--   time_to_train_minutes double: mean run_start → run_stop time over those runs, minutes (evaluation included)
--   score_minutes double
--   model_flops_to_train double: samples_to_converge × model_flops_per_sample
--   achieved_flops_per_accelerator double: model FLOP/s per accelerator over the time to train
--   mfu double: model FLOPs utilization: achieved ÷ peak_flops_used (NULL with mfu_null_reason; never above 1)
--   precision varchar: the training format the figure assumes (vocabulary precision: fp4, fp8, bf16, fp16, ...; NULL: the logs state one no spelling maps)
--   precision_source varchar: where the precision comes from (vocabulary precision_source: log, system_description, stack, assumed_bf16, unmapped_statement)
--   precision_evidence varchar: the text that states it
--   peak_dense_fp8_flops double: the accelerator's dense FP8 peak, FLOP/s
--   peak_flops_used double: the dense peak of the result's precision, FLOP/s (FP16 uses the BF16 peak; NULL for a precision without a kept peak: TF32, FP32, INT8, ...)
--   mfu_null_reason varchar: why mfu is NULL (no FLOPs figure, no peak, no samples, a figure above 1, ...)
--   peak_dense_fp4_flops double: the accelerator's dense FP4 peak, FLOP/s
--   model_flops_per_sample double: model FLOPs to train on one sample (dim_benchmark)
--   mfu_basis varchar: what the figure was measured against: the peak, its accelerator and where the precision came from
-- Model FLOPs utilization of each scored result:
--   samples to converge × model FLOPs per sample
--     / (time to train × accelerators × peak dense FLOP/s in the result's training precision)
-- over the runs of the official olympic mean (mean samples over mean time). Time to train is
-- run_start → run_stop, so evaluation time is included (end-to-end MFU).
-- Inputs: fct_training_result, fct_training_run (samples, precision_logged), dim_system (accelerator,
-- precision_stated, framework_family), dim_accelerator (dense BF16/FP8/FP4 peaks), dim_benchmark.
-- Precision (`precision_source`, vocabulary `precision_source`), one per software stack and never
-- inferred from the speed itself:
--   log                 the format most scored runs' logs state (ties: the narrower format): a
--                       lowest_numerical_precision_in_linear line (the 6.0 rules), else a configuration flag
--   unmapped_statement  the logs state a lowest numerical precision no spelling maps: precision NULL,
--                       no MFU, flagged (never guessed, never BF16)
--   system_description  else the format the systems file states
--   stack               else the format the other results of its stack state, where they agree: the
--                       same round, submitter, benchmark, accelerator and framework family
--   assumed_bf16        else BF16, the reference's format
-- FP16 runs use the BF16 peak (the same dense tensor rate on every chip here that has both).
-- `mfu` is NULL with `mfu_null_reason` when a figure is missing, and when it would exceed 1 (no run can
-- beat the dense peak of the format it trains in: the FLOPs count, the precision or the peak is wrong).
-- `mfu_basis` says what the figure was measured against.
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

narrowness (precision, rank) as (
    values ('int4', 8), ('fp4', 7), ('int8', 6), ('fp8', 5), ('bf16', 4), ('fp16', 3), ('tf32', 2), ('fp32', 1), ('fp64', 0)
),

unmapped as (
    -- results whose logs state a lowest numerical precision that no spelling maps (and no mapped one)
    select round, submitter, system, benchmark, min(run_file || ': ' || precision_statement_unmapped) as evidence
    from fct_training_run
    where scored and precision_statement_unmapped is not null
    group by all
),

logged as (
    -- the format most scored runs state (ties: the narrower format, so MFU is never inflated)
    select
        f.round, f.submitter, f.system, f.benchmark,
        arg_max(f.precision_logged, f.runs_stating * 10 + coalesce(n.rank, 0)) as precision,
        arg_max(f.evidence, f.runs_stating * 10 + coalesce(n.rank, 0)) as evidence
    from formats_in_logs as f
    left join narrowness as n on n.precision = f.precision_logged
    group by all
),

stated as (
    select
        r.*,
        s.accelerator,
        s.framework_family,
        case when u.evidence is null or l.precision is not null then coalesce(l.precision, s.precision_stated) end
            as stated_precision,
        case
            when l.precision is not null then 'log'
            when u.evidence is not null then 'unmapped_statement'
            when s.precision_stated is not null then 'system_description'
        end as stated_source,
        coalesce(l.evidence, u.evidence, s.precision_evidence) as stated_evidence
    from fct_training_result as r
    left join dim_system as s using (round, submitter, system)
    left join logged as l using (round, submitter, system, benchmark)
    left join unmapped as u using (round, submitter, system, benchmark)
    where r.score_minutes is not null
),

stacks as (
    -- what the results of one software stack state, when they state one format only
    select
        round, submitter, benchmark, accelerator, framework_family,
        any_value(stated_precision) as precision,
        min(system || ' (' || stated_source || ')') as evidence
    from stated
    where stated_precision is not null and accelerator is not null
    group by all
    having count(distinct stated_precision) = 1
),

results as (
    select
        st.* exclude (stated_precision, stated_source, stated_evidence),
        case when st.stated_source = 'unmapped_statement' then null
            else coalesce(st.stated_precision, k.precision, 'bf16') end as precision,
        case
            when st.stated_source is not null then st.stated_source
            when k.precision is not null then 'stack'
            else 'assumed_bf16'
        end as precision_source,
        coalesce(st.stated_evidence, 'same stack: ' || k.evidence) as precision_evidence
    from stated as st
    left join stacks as k using (round, submitter, benchmark, accelerator, framework_family)
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
        b.model_flops_per_sample,
        b.flops_derivation,
        runs.runs_in_mean,
        runs.samples_to_converge,
        runs.time_to_train_minutes,
        r.score_minutes,
        r.precision,
        r.precision_source,
        r.precision_evidence,
        a.peak_dense_fp8_flops,
        a.peak_dense_fp4_flops,
        case r.precision
            when 'fp8' then a.peak_dense_fp8_flops
            when 'fp4' then a.peak_dense_fp4_flops
            when 'bf16' then a.peak_dense_bf16_flops
            when 'fp16' then a.peak_dense_bf16_flops
        end as peak_flops_used,
        runs.samples_to_converge * b.model_flops_per_sample
            / (runs.time_to_train_minutes * 60.0 * r.accelerator_count) as achieved_flops
    from results as r
    left join dim_accelerator as a on a.accelerator = r.accelerator
    left join dim_benchmark as b on b.benchmark = r.benchmark
    left join runs
        on runs.round = r.round and runs.submitter = r.submitter and runs.system = r.system
        and runs.benchmark = r.benchmark
),

reasoned as (
    select
        *,
        case
            when model_flops_per_sample is null then 'benchmark has no sound FLOPs figure (dim_benchmark)'
            when accelerator is null then 'accelerator not mapped (see the unmapped_accelerators check)'
            when samples_to_converge is null or time_to_train_minutes is null
                then 'no samples to converge for the olympic-mean runs (fct_training_run.samples_to_converge_null_reason)'
            when accelerator_count is null or accelerator_count = 0 then 'accelerator count unknown'
            when precision_source = 'unmapped_statement' then
                'the logs state a precision no spelling of precision_spellings.csv maps (' || precision_evidence
                || '): not guessed'
            when peak_flops_used is null then 'no dense ' || upper(precision) || ' peak for ' || accelerator || ' in dim_accelerator'
            when achieved_flops / peak_flops_used > 1 then
                'MFU ' || printf('%.3f', achieved_flops / peak_flops_used) || ' above 1 against the dense '
                || upper(precision) || ' peak (' || precision_source || '): the FLOPs count, precision or peak is wrong'
        end as mfu_null_reason
    from measured
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
    samples_to_converge * model_flops_per_sample as model_flops_to_train,
    achieved_flops as achieved_flops_per_accelerator,
    case when mfu_null_reason is null then achieved_flops / peak_flops_used end as mfu,
    precision,
    precision_source,
    precision_evidence,
    peak_dense_fp8_flops,
    peak_flops_used,
    mfu_null_reason,
    peak_dense_fp4_flops,
    model_flops_per_sample,
    case when peak_flops_used is not null then
        'dense ' || upper(case precision when 'fp16' then 'bf16' else precision end) || ' peak of ' || accelerator
        || ' (' || printf('%.4g', peak_flops_used) || ' FLOP/s), precision from ' || precision_source
    end as mfu_basis
from reasoned
