-- model: int_run_scoring
-- kind: table
-- grain: round, run_file, rules_basis
-- depends on: stg_training_runs, dim_benchmark
-- description: Whether each run counts toward its result's score, under each rule basis.
-- Whether each run counts toward its result's score, under two rule bases:
--   'published' — the round's own mlcommons/logging release (the score as MLCommons published it),
--   'current'   — today's pinned mlperf-logging package.
-- The official olympic mean: drop the `max_dropped` fastest runs, and as many of the slowest as
-- were not already dropped by the rules; `max_dropped` is dim_benchmark.olympic_runs_dropped (one
-- benchmark drops more: see pipelines/lib/reference/benchmarks.csv), one for a benchmark it lacks.
with verdicts as (
    select round, submitter, system, benchmark, run_file, time_to_train_minutes,
        'published' as rules_basis, drop_reason
    from stg_training_runs
    union all
    select round, submitter, system, benchmark, run_file, time_to_train_minutes,
        'current' as rules_basis, current_rules_drop_reason as drop_reason
    from stg_training_runs
),

runs as (
    select
        verdicts.*,
        drop_reason is null as scored,
        coalesce(b.olympic_runs_dropped, 1) as max_dropped
    from verdicts
    left join dim_benchmark as b using (benchmark)
),

ranked as (
    select
        *,
        count(*) filter (where not scored) over result_runs as runs_dropped,
        row_number() over (
            partition by rules_basis, round, submitter, system, benchmark, scored
            order by time_to_train_minutes, run_file
        ) as speed_rank,
        count(*) over (partition by rules_basis, round, submitter, system, benchmark, scored) as same_verdict_runs
    from runs
    window result_runs as (partition by rules_basis, round, submitter, system, benchmark)
)

select
    round,
    submitter,
    system,
    benchmark,
    run_file,
    rules_basis,
    time_to_train_minutes,
    drop_reason,
    scored,
    max_dropped,
    runs_dropped,
    in_olympic_mean(scored, runs_dropped, max_dropped, speed_rank, same_verdict_runs) as in_olympic_mean
from ranked
