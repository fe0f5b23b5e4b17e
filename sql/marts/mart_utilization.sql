-- Model FLOPs utilization of each official result:
--   samples to converge × model FLOPs per sample / (time-to-train × accelerators × peak dense BF16 FLOP/s)
-- averaged over the runs in the official olympic mean (mean samples over mean time). Time-to-train
-- is run_start → run_stop, so evaluation time is included (end-to-end MFU). NULL where the benchmark
-- has no sound FLOPs figure (dim_benchmark) or the accelerator no BF16 peak (dim_accelerator).
-- Against the BF16 peak, submissions that train in FP8/INT8 can show MFU above what BF16 allows
-- (up to 2× for FP8), so compare MFU within a numeric format.
with runs as (
    select
        round, submitter, system, benchmark,
        avg(samples_to_converge) as samples_to_converge,
        avg(time_to_train_minutes) as time_to_train_minutes,
        count(*) as runs_in_mean
    from fct_training_run
    where in_olympic_mean
    group by all
)

select
    r.round,
    r.submitter,
    r.system,
    r.benchmark,
    r.division,
    s.accelerator,
    r.accelerator_count,
    a.peak_dense_bf16_flops,
    b.convergence_unit,
    b.model_flops_per_convergence_unit,
    b.flops_derivation,
    runs.runs_in_mean,
    runs.samples_to_converge,
    runs.time_to_train_minutes,
    r.score_minutes,
    runs.samples_to_converge * b.model_flops_per_convergence_unit as model_flops_to_train,
    runs.samples_to_converge * b.model_flops_per_convergence_unit
        / (runs.time_to_train_minutes * 60.0 * r.accelerator_count) as achieved_flops_per_accelerator,
    runs.samples_to_converge * b.model_flops_per_convergence_unit
        / (runs.time_to_train_minutes * 60.0 * r.accelerator_count * a.peak_dense_bf16_flops) as mfu
from fct_training_result as r
left join dim_system as s using (round, submitter, system)
left join dim_accelerator as a on a.accelerator = s.accelerator
left join dim_benchmark as b on b.benchmark = r.benchmark
left join runs
    on runs.round = r.round and runs.submitter = r.submitter and runs.system = r.system
    and runs.benchmark = r.benchmark
where r.score_minutes is not null
