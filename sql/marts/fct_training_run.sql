-- One row per result file. `scored` = the run counts toward the score (it passed the round's
-- rules); `in_olympic_mean` = it survived the olympic trimming too.
-- Throughput (inputs: stg_mlperf_runs, dim_benchmark): `steady_state_throughput` and
-- `end_to_end_throughput` are in dim_benchmark.throughput_unit (one unit per benchmark). The log's
-- rate is in epochs or in samples (`log_throughput_unit`), and so is its convergence point
-- (`progress_counted_in`), both detected per log; epochs are converted with the benchmark's dataset
-- size for the round. end-to-end = samples to converge / time to train.
-- `throughput_check_reason` is set when steady ÷ end-to-end lies outside [0.9, 3.0] for the run,
-- or the median of its benchmark and round outside [0.95, 2.0]: such runs are not scaling evidence.
with runs as (
    select
        stg_mlperf_runs.* exclude (steady_state_throughput, throughput_unit),
        stg_mlperf_runs.steady_state_throughput as log_throughput,
        stg_mlperf_runs.throughput_unit as log_throughput_unit,
        drop_reason is null as scored,
        case when stg_mlperf_runs.benchmark = 'unet3d' then 4 else 1 end as max_dropped,
        b.throughput_unit,
        b.convergence_unit,
        -- samples in one epoch of this benchmark in this round (rounds compared as version numbers)
        case
            when b.earlier_dataset_last_round is not null
                and list_transform(string_split(ltrim(round, 'v'), '.'), lambda x: try_cast(x as integer))
                    <= list_transform(string_split(ltrim(b.earlier_dataset_last_round, 'v'), '.'), lambda x: try_cast(x as integer))
                then b.earlier_dataset_size
            else b.dataset_size
        end as samples_per_epoch
    from stg_mlperf_runs
    left join dim_benchmark as b
        on b.benchmark = case when stg_mlperf_runs.benchmark = 'mask' then 'maskrcnn' else stg_mlperf_runs.benchmark end
),

throughput as (
    select
        *,
        case log_throughput_unit when 'epochs/s' then samples_per_epoch when 'samples/s' then 1.0 end
            as samples_per_rate_unit,
        case progress_counted_in when 'epochs' then samples_per_epoch when 'samples' then 1.0 end
            as samples_per_progress_unit,
        log_throughput * samples_per_rate_unit as steady_state_throughput,
        case when time_to_train_minutes > 0 and samples_to_converge > 0 then
            (samples_to_converge - coalesce(progress_offset, 0)) * samples_per_progress_unit
            / (time_to_train_minutes * 60.0)
        end as end_to_end_throughput,
        steady_state_throughput / nullif(end_to_end_throughput, 0) as steady_to_end_to_end_ratio
    from runs
),

checked as (
    select
        *,
        median(steady_to_end_to_end_ratio) filter (where scored) over (partition by round, benchmark)
            as benchmark_round_median_ratio
    from throughput
),

groups as (
    select round, submitter, system, benchmark, count(*) filter (where not scored) as runs_dropped
    from checked
    group by all
),

ranked as (
    select
        checked.*,
        groups.runs_dropped,
        row_number() over (
            partition by checked.round, checked.submitter, checked.system, checked.benchmark, checked.scored
            order by checked.time_to_train_minutes, checked.run_file
        ) as speed_rank,
        count(*) over (
            partition by checked.round, checked.submitter, checked.system, checked.benchmark, checked.scored
        ) as scored_runs
    from checked
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
    end_to_end_throughput,
    steady_to_end_to_end_ratio,
    case
        when steady_to_end_to_end_ratio not between 0.9 and 3.0 then
            'steady-state ÷ end-to-end throughput = ' || round(steady_to_end_to_end_ratio, 2)
            || ', outside [0.9, 3.0]'
        when benchmark_round_median_ratio not between 0.95 and 2.0 then
            'median steady-state ÷ end-to-end throughput of ' || benchmark || ' in ' || round || ' = '
            || round(benchmark_round_median_ratio, 2) || ', outside [0.95, 2.0]'
    end as throughput_check_reason,
    case
        when steady_state_throughput is not null then null
        when log_throughput is not null and samples_per_rate_unit is null then
            'the log counts epochs and dim_benchmark has no dataset size for ' || benchmark
        when throughput_unit is null then 'benchmark ' || benchmark || ' is not in dim_benchmark'
        else throughput_null_reason
    end as throughput_null_reason,
    throughput_counting,
    progress_counted_in,
    log_throughput,
    log_throughput_unit,
    samples_per_epoch
from ranked
