-- model: fct_training_run
-- kind: table
-- grain: round, run_file
-- depends on: stg_mlperf_runs, int_run_scoring, dim_benchmark
-- description: One row per result file: verdicts under both rule bases, times, throughputs.
-- `scored` = the run counts toward the score as published (it passed the round's own rules);
-- `in_olympic_mean` = it survived the olympic trimming too. The `*_current_rules` columns say the
-- same under today's pinned mlperf-logging package.
-- Throughput: `steady_state_throughput` and `end_to_end_throughput` are in
-- dim_benchmark.throughput_unit (one unit per benchmark). The log's rate is in epochs or in samples
-- (`log_throughput_unit`), and so is its convergence point (`progress_counted_in`), both detected per
-- log; epochs are converted with the benchmark's dataset size for the round. end-to-end = samples to
-- converge / time to train. `throughput_check_reason` is set when steady ÷ end-to-end lies outside
-- [0.9, 3.0] for the run, or the median of its benchmark and round outside [0.95, 2.0]: such runs are
-- not scaling evidence.
with runs as (
    select
        stg_mlperf_runs.* exclude (steady_state_throughput, throughput_unit),
        stg_mlperf_runs.steady_state_throughput as log_throughput,
        stg_mlperf_runs.throughput_unit as log_throughput_unit,
        drop_reason is null as scored,
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
)

select
    runs.round,
    runs.submitter,
    runs.system,
    runs.benchmark,
    runs.run_file,
    runs.run_file_name,
    case when published.scored then 'scored' else 'dropped' end as status,
    published.scored,
    runs.drop_reason,
    runs.run_start_ms,
    runs.run_stop_ms,
    runs.time_to_train_minutes,
    try_cast(runs.global_batch_size as bigint) as global_batch_size,  -- a count: whole in every log
    runs.samples_to_converge,
    runs.seed,
    runs.steady_state_throughput,
    runs.throughput_unit,
    published.in_olympic_mean,
    runs.run_status,
    runs.ruleset,
    runs.ruleset_ref,
    current.scored as scored_current_rules,
    runs.current_rules_drop_reason,
    current.in_olympic_mean as in_olympic_mean_current_rules,
    runs.benchmark_logged,
    runs.log_lines,
    runs.mllog_lines,
    runs.parse_errors,
    runs.log_sha256,
    runs.run_identity,
    runs.first_seen_round,
    runs.first_seen_submitter,
    runs.first_seen_system,
    -- the training format the log states ('fp8', 'bf16', ...; NULL: not stated) and the line saying so
    runs.precision_logged,
    runs.precision_evidence,
    runs.end_to_end_throughput,
    runs.steady_to_end_to_end_ratio,
    case
        when runs.steady_to_end_to_end_ratio not between 0.9 and 3.0 then
            'steady-state ÷ end-to-end throughput = ' || round(runs.steady_to_end_to_end_ratio, 2)
            || ', outside [0.9, 3.0]'
        when runs.benchmark_round_median_ratio not between 0.95 and 2.0 then
            'median steady-state ÷ end-to-end throughput of ' || runs.benchmark || ' in ' || runs.round || ' = '
            || round(runs.benchmark_round_median_ratio, 2) || ', outside [0.95, 2.0]'
    end as throughput_check_reason,
    case
        when runs.steady_state_throughput is not null then null
        when runs.log_throughput is not null and runs.samples_per_rate_unit is null then
            'the log counts epochs and dim_benchmark has no dataset size for ' || runs.benchmark
        when runs.throughput_unit is null then 'benchmark ' || runs.benchmark || ' is not in dim_benchmark'
        else runs.throughput_null_reason
    end as throughput_null_reason,
    runs.throughput_counting,
    runs.progress_counted_in,
    runs.log_throughput,
    runs.log_throughput_unit,
    runs.samples_per_epoch
from checked as runs
join int_run_scoring as published on published.run_file = runs.run_file and published.round = runs.round
    and published.rules_basis = 'published'
join int_run_scoring as current on current.run_file = runs.run_file and current.round = runs.round
    and current.rules_basis = 'current'
