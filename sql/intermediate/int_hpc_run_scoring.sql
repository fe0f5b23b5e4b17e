-- model: int_hpc_run_scoring
-- kind: table
-- grain: round, run_file, rules_basis
-- depends on: stg_hpc_runs, raw_hpc_benchmark_seed
-- description: Whether each HPC run counts toward its result, under each rule basis.
-- Whether each HPC run counts, under the round's own rules release ('published') and today's pinned
-- package ('current'). Strong results: the official olympic mean drops the fastest and the slowest
-- run (`olympic_runs_dropped` of hpc_benchmarks.csv, one for a benchmark it lacks), as many of the
-- slowest as were not already dropped by the rules. Weak results: every run that counts is one model.
with verdicts as (
    select round, submitter, system, scale, benchmark, run_file, time_to_train_minutes, run_start_ms,
        run_stop_ms, instance_scale, 'published' as rules_basis, drop_reason
    from stg_hpc_runs
    union all
    select round, submitter, system, scale, benchmark, run_file, time_to_train_minutes, run_start_ms,
        run_stop_ms, instance_scale, 'current' as rules_basis, current_rules_drop_reason as drop_reason
    from stg_hpc_runs
),

ranked as (
    select
        v.*,
        v.drop_reason is null as scored,
        coalesce(try_cast(seed.olympic_runs_dropped as integer), 1) as max_dropped,
        count(*) filter (where v.drop_reason is not null) over result_runs as runs_dropped,
        row_number() over (
            partition by v.rules_basis, v.round, v.submitter, v.system, v.scale, v.benchmark, v.drop_reason is null
            order by v.time_to_train_minutes, v.run_file
        ) as speed_rank,
        count(*) over (
            partition by v.rules_basis, v.round, v.submitter, v.system, v.scale, v.benchmark, v.drop_reason is null
        ) as same_verdict_runs
    from verdicts as v
    left join raw_hpc_benchmark_seed as seed using (benchmark)
    window result_runs as (partition by v.rules_basis, v.round, v.submitter, v.system, v.scale, v.benchmark)
)

select
    round,
    submitter,
    system,
    scale,
    benchmark,
    run_file,
    rules_basis,
    time_to_train_minutes,
    run_start_ms,
    run_stop_ms,
    instance_scale,
    drop_reason,
    scored,
    max_dropped,
    runs_dropped,
    scale = 'strong' and in_olympic_mean(scored, runs_dropped, max_dropped, speed_rank, same_verdict_runs)
        as in_olympic_mean
from ranked
