-- One row per result file. `scored` = the run counts toward the score (it passed the round's
-- rules); `in_olympic_mean` = it survived the olympic trimming too.
with runs as (
    select
        *,
        drop_reason is null as scored,
        case when benchmark = 'unet3d' then 4 else 1 end as max_dropped
    from stg_mlperf_runs
),

groups as (
    select round, submitter, system, benchmark, count(*) filter (where not scored) as runs_dropped
    from runs
    group by all
),

ranked as (
    select
        runs.*,
        groups.runs_dropped,
        row_number() over (
            partition by runs.round, runs.submitter, runs.system, runs.benchmark, runs.scored
            order by runs.time_to_train_minutes, runs.run_file
        ) as speed_rank,
        count(*) over (
            partition by runs.round, runs.submitter, runs.system, runs.benchmark, runs.scored
        ) as scored_runs
    from runs
    join groups using (round, submitter, system, benchmark)
)

select
    round,
    submitter,
    system,
    benchmark,
    run_file,
    run_file_name,
    case when scored then 'scored' else 'dropped' end as status,
    scored,
    drop_reason,
    run_start_ms,
    run_stop_ms,
    time_to_train_minutes,
    global_batch_size,
    samples_to_converge,
    seed,
    steady_state_throughput,
    throughput_unit,
    -- The official olympic mean: drop the `max_dropped` fastest, and as many of the slowest as
    -- were not already dropped by the rules.
    scored
        and runs_dropped <= max_dropped
        and speed_rank > max_dropped
        and speed_rank <= scored_runs - (max_dropped - runs_dropped) as in_olympic_mean,
    run_status,
    ruleset,
    benchmark_logged,
    log_lines,
    mllog_lines,
    parse_errors,
    -- the training format the log states ('fp8', 'bf16', ...; NULL: not stated) and the line saying so
    precision_logged,
    precision_evidence
from ranked
