-- model: fct_training_run
-- kind: table
-- grain: round, run_file
-- depends on: stg_training_runs, int_run_scoring, dim_benchmark, dim_benchmark_dataset, fct_power_log
-- description: One row per result file: verdicts under both rule bases, times, samples, throughputs.
-- columns:
--   round varchar
--   submitter varchar
--   system varchar
--   benchmark varchar
--   run_file varchar
--   run_file_name varchar: the result log's file name (result_0.txt, ...)
--   status varchar: scored or dropped, under the published rules
--   scored boolean: the run counts toward the score as published: it passed the round's own rules
--   drop_reason varchar: why the published rules drop it (NULL: scored)
--   run_start_ms double: the run_start time stamp, ms since the epoch
--   run_stop_ms double: the run_stop time stamp, ms since the epoch
--   time_to_train_minutes double: run_stop − run_start, minutes (the official time to train of the run)
--   global_batch_size bigint: the logged global batch size
--   samples_to_converge double: samples to converge, in the benchmark's samples (NULL with samples_to_converge_null_reason)
--   seed double: the logged seed
--   steady_state_throughput double: median throughput of the training blocks after the first, samples/s (NULL with throughput_null_reason)
--   throughput_unit varchar
--   in_olympic_mean boolean: the run is in the published score's olympic mean
--   run_status varchar: run_stop's logged status (success, aborted, ...)
--   ruleset varchar: the rule folder that judged it as published (training_4.1.0, ...)
--   ruleset_ref varchar
--   scored_current_rules boolean: the run counts under today's pinned mlperf-logging package
--   current_rules_drop_reason varchar: why today's rules drop it (NULL: they do not)
--   in_olympic_mean_current_rules boolean: the run is in the olympic mean under today's rules
--   benchmark_logged varchar: the benchmark the log's submission_benchmark line names
--   log_lines bigint: lines in the result log
--   mllog_lines bigint: MLPerf log lines in it
--   parse_errors bigint: MLPerf log lines that do not parse
--   log_sha256 varchar: sha256 of the result file's bytes as published
--   run_identity varchar: the run: its run_start–run_stop instant (ms), else log_sha256 (finds runs republished with a few lines changed)
--   first_seen_round varchar: the earliest loaded round the same run appears in
--   first_seen_submitter varchar: the submitter it appears under there
--   first_seen_system varchar: the system it appears under there
--   precision_logged varchar: the training format the log states (vocabulary precision; NULL: not stated): its lowest_numerical_precision_in_linear line, else its configuration
--   precision_evidence varchar: the log line that states it
--   precision_statements varchar: the log's lowest_numerical_precision_* lines as logged (linear, attention, communication; NULL: none)
--   precision_statement_unmapped varchar: the deciding statement when no spelling of precision_spellings.csv maps its value: flagged, no precision guessed
--   end_to_end_throughput double: samples_to_converge ÷ time to train, samples/s
--   steady_to_end_to_end_ratio double: steady_state_throughput ÷ end_to_end_throughput
--   throughput_check_reason varchar: why the run is no scaling evidence: its ratio lies outside [0.9, 3.0] (NULL: it passes)
--   throughput_null_reason varchar: why the throughputs are NULL (no counted progress, unknown dataset size, a benchmark-round median ratio outside [0.9, 1.5], ...)
--   throughput_counting varchar: how a block's work was read (vocabulary throughput_counting: running_total, block_count, epoch_markers, eval_markers)
--   progress_counted_in varchar: the unit the log counts a block's progress in (vocabulary progress_unit)
--   log_throughput double: the steady-state throughput in the log's own unit, before conversion to samples
--   log_throughput_unit varchar: that unit (samples/s, epochs/s, tokens/s, ...)
--   samples_per_epoch double: samples in one epoch for this run (the log's train_samples when it is a known size, else the dated dataset table)
--   epochs_to_converge double: passes over the training set to converge (epoch-counted benchmarks)
--   samples_to_converge_null_reason varchar: why samples_to_converge is NULL (not read, or outside dim_benchmark's absolute bounds)
--   convergence_progress double: the convergence point as logged, in convergence_counted_in
--   convergence_counted_in varchar: the unit of convergence_progress (vocabulary progress_unit: samples, tokens, epochs, steps)
--   convergence_source varchar: the log key it was read from (eval_accuracy samples_count, ...)
--   samples_per_epoch_source varchar: where samples_per_epoch comes from (log: train_samples, or dataset table: ...)
--   samples_per_epoch_flag varchar: where the log's train_samples and the dated dataset table disagree (NULL: they agree or one is missing)
--   train_samples_logged double: the train_samples the log states
--   values_nulled varchar: values of the run nulled by validation, with the reason
--   power_logs bigint: node and switch power logs of the run (0: not measured)
--   power_measurement_type varchar: AC or DC, as the run's power logs state it
--   energy_j double: energy of the run, J: the sum of its power logs' energy (NULL with energy_null_reason)
--   energy_null_reason varchar: why a measured run has no energy (the first of its logs' reasons)
-- `scored` = the run counts toward the score as published (it passed the round's own rules);
-- `in_olympic_mean` = it survived the olympic trimming too. The `*_current_rules` columns say the
-- same under today's pinned mlperf-logging package.
-- Units: a log counts its progress in samples, tokens, epochs or steps (`convergence_counted_in`,
-- `log_throughput_unit`); every figure here is converted to the benchmark's samples:
--   samples_to_converge = convergence_progress × samples per unit (tokens ÷ tokens per sample,
--                         epochs × samples_per_epoch, steps × global_batch_size), NULL with
--                         `samples_to_converge_null_reason` when it cannot be read or lies outside
--                         dim_benchmark's absolute bounds
--   epochs_to_converge  = passes over the training set (epoch-counted benchmarks)
--   samples_per_epoch   = the log's own `train_samples` when it is one of the benchmark's known
--                         training-set sizes (dim_benchmark_dataset, within 1 %), else the dataset the
--                         table dates to the round; `samples_per_epoch_flag` says where the two disagree
--   steady_state_throughput, end_to_end_throughput (= samples_to_converge / time to train): samples per
--                         second, in dim_benchmark.throughput_unit
-- Plausibility: when the median steady-state ÷ end-to-end ratio of a benchmark in a round lies outside
-- [0.9, 1.5] both throughputs of that benchmark and round are NULL, `throughput_null_reason` says so;
-- a run whose own ratio lies outside [0.9, 3.0] keeps its figures but `throughput_check_reason` says
-- it is no scaling evidence.
with runs as (
    select
        r.* exclude (steady_state_throughput, throughput_unit),
        r.steady_state_throughput as log_throughput,
        r.throughput_unit as log_throughput_unit,
        r.drop_reason is null as scored,
        coalesce(b.benchmark, case when r.benchmark = 'mask' then 'maskrcnn' end) as benchmark_key,
        coalesce(b.throughput_unit, m.throughput_unit) as benchmark_throughput_unit,
        coalesce(b.convergence_unit, m.convergence_unit) as convergence_unit,
        coalesce(b.tokens_or_samples_per_sample, m.tokens_or_samples_per_sample) as tokens_per_sample,
        coalesce(b.samples_to_converge_min, m.samples_to_converge_min) as samples_min,
        coalesce(b.samples_to_converge_max, m.samples_to_converge_max) as samples_max,
        coalesce(b.bounds_source, m.bounds_source) as bounds_source
    from stg_training_runs as r
    left join dim_benchmark as b on b.benchmark = r.benchmark
    -- the v0.6 Mask R-CNN folder is `mask`
    left join dim_benchmark as m on r.benchmark = 'mask' and m.benchmark = 'maskrcnn'
),

known_sizes as (
    select benchmark, count(*) as datasets from dim_benchmark_dataset group by benchmark
),

-- the dataset whose size the log's train_samples is (within 1 %), the closest if several
logged_dataset as (
    select
        r.round,
        r.run_file,
        arg_min(d.dataset, abs(r.train_samples_logged / d.samples_per_epoch - 1)) as dataset
    from runs as r
    join dim_benchmark_dataset as d
        on d.benchmark = r.benchmark_key
        and abs(r.train_samples_logged / d.samples_per_epoch - 1) <= 0.01
    group by all
),

-- the dataset the table dates to the run's round
dated_dataset as (
    select r.round, r.run_file, d.dataset, d.samples_per_epoch
    from runs as r
    join dim_benchmark_dataset as d
        on d.benchmark = r.benchmark_key
        and r.round_order >= d.first_round_order
        and (d.last_round_order is null or r.round_order <= d.last_round_order)
),

sized as (
    select
        r.*,
        case
            when r.train_samples_logged is not null and (l.dataset is not null or k.benchmark is null)
                then r.train_samples_logged
            else dd.samples_per_epoch
        end as samples_per_epoch,
        case
            when r.train_samples_logged is not null and l.dataset is not null then 'log: train_samples (' || l.dataset || ')'
            when r.train_samples_logged is not null and k.benchmark is null
                then 'log: train_samples (no dataset row for ' || r.benchmark || ' to check it against)'
            when dd.samples_per_epoch is not null then 'dataset table: ' || dd.dataset
        end as samples_per_epoch_source,
        case
            when r.train_samples_logged is not null and k.benchmark is not null and l.dataset is null then
                'train_samples ' || r.train_samples_logged::bigint || ' in the log is no known training-set size of '
                || r.benchmark_key || ': '
                || coalesce('the dataset table''s ' || dd.samples_per_epoch::bigint || ' (' || dd.dataset || ') is used',
                            'no samples per epoch')
            when l.dataset is not null and l.dataset is distinct from dd.dataset then
                'the log''s train_samples ' || r.train_samples_logged::bigint || ' is ' || l.dataset
                || ', the dataset table dates ' || r.round || ' to ' || coalesce(dd.dataset, 'no dataset')
                || ': the log is used'
        end as samples_per_epoch_flag
    from runs as r
    left join known_sizes as k on k.benchmark = r.benchmark_key
    left join logged_dataset as l on l.round = r.round and l.run_file = r.run_file
    left join dated_dataset as dd on dd.round = r.round and dd.run_file = r.run_file
),

converted as (
    select
        *,
        -- samples in one unit of the log's convergence count and of its throughput
        case convergence_counted_in
            when 'samples' then 1.0
            when 'tokens' then 1.0 / tokens_per_sample
            when 'epochs' then samples_per_epoch
            when 'steps' then global_batch_size
        end as samples_per_convergence_unit,
        case split_part(log_throughput_unit, '/', 1)
            when 'samples' then 1.0
            when 'tokens' then 1.0 / tokens_per_sample
            when 'epochs' then samples_per_epoch
            when 'steps' then global_batch_size
        end as samples_per_rate_unit
    from sized
),

measured as (
    select
        *,
        convergence_progress * samples_per_convergence_unit as samples_read,
        case
            when convergence_counted_in = 'epochs' then convergence_progress
            when convergence_unit = 'epochs' and samples_per_epoch > 0
                then convergence_progress * samples_per_convergence_unit / samples_per_epoch
        end as epochs_to_converge,
        case
            when convergence_progress is null then convergence_null_reason
            when samples_per_convergence_unit is null then
                case convergence_counted_in
                    when 'epochs' then 'the log counts epochs and no samples per epoch is known for ' || benchmark
                    when 'steps' then 'the log counts steps and states no global batch size'
                    else 'the log counts ' || convergence_counted_in || ' and dim_benchmark has no '
                        || 'tokens per sample for ' || benchmark
                end
            when samples_min is not null
                and convergence_progress * samples_per_convergence_unit not between samples_min and samples_max then
                printf('%.6g', convergence_progress * samples_per_convergence_unit) || ' samples ('
                || printf('%g', convergence_progress) || ' ' || convergence_counted_in || ') is outside the plausible '
                || printf('[%.6g, %.6g]', samples_min, samples_max) || ' of ' || benchmark || ' (' || bounds_source || ')'
        end as samples_null_reason
    from converted
),

throughput as (
    select
        *,
        case when samples_null_reason is null then samples_read end as samples_to_converge,
        log_throughput * samples_per_rate_unit as steady_raw,
        case when samples_null_reason is null and time_to_train_minutes > 0
            then samples_read / (time_to_train_minutes * 60.0) end as end_to_end_raw
    from measured
),

checked as (
    select
        *,
        steady_raw / nullif(end_to_end_raw, 0) as steady_to_end_to_end_ratio,
        median(steady_raw / nullif(end_to_end_raw, 0)) filter (where scored) over (partition by round, benchmark)
            as benchmark_round_median_ratio
    from throughput
),

plausible as (
    select
        *,
        case when benchmark_round_median_ratio not between 0.9 and 1.5 then
            'median steady-state ÷ end-to-end throughput of ' || benchmark || ' in ' || round || ' = '
            || printf('%.3g', benchmark_round_median_ratio) || ', outside [0.9, 1.5]: the two disagree on the unit'
        end as benchmark_round_throughput_problem
    from checked
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
    case when runs.benchmark_round_throughput_problem is null then runs.steady_raw end as steady_state_throughput,
    coalesce(runs.benchmark_throughput_unit, 'samples/s') as throughput_unit,
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
    runs.precision_statements,
    runs.precision_statement_unmapped,
    case when runs.benchmark_round_throughput_problem is null then runs.end_to_end_raw end as end_to_end_throughput,
    case when runs.benchmark_round_throughput_problem is null then runs.steady_to_end_to_end_ratio end
        as steady_to_end_to_end_ratio,
    case
        when runs.benchmark_round_throughput_problem is null and runs.steady_to_end_to_end_ratio not between 0.9 and 3.0 then
            'steady-state ÷ end-to-end throughput = ' || round(runs.steady_to_end_to_end_ratio, 2)
            || ', outside [0.9, 3.0]'
    end as throughput_check_reason,
    case
        when runs.benchmark_round_throughput_problem is not null then runs.benchmark_round_throughput_problem
        when runs.steady_raw is not null then null
        when runs.log_throughput is not null and runs.samples_per_rate_unit is null then
            'the log counts ' || split_part(runs.log_throughput_unit, '/', 1) || ' and no conversion to samples is known for '
            || runs.benchmark || ' (samples per epoch, tokens per sample or global batch size)'
        else runs.throughput_null_reason
    end as throughput_null_reason,
    runs.throughput_counting,
    runs.progress_counted_in,
    runs.log_throughput,
    runs.log_throughput_unit,
    runs.samples_per_epoch,
    runs.epochs_to_converge,
    runs.samples_null_reason as samples_to_converge_null_reason,
    runs.convergence_progress,
    runs.convergence_counted_in,
    runs.convergence_source,
    runs.samples_per_epoch_source,
    runs.samples_per_epoch_flag,
    runs.train_samples_logged,
    runs.values_nulled,
    coalesce(power.logs, 0) as power_logs,
    power.measurement_type as power_measurement_type,
    power.energy_j,
    power.energy_null_reason
from plausible as runs
join int_run_scoring as published on published.run_file = runs.run_file and published.round = runs.round
    and published.rules_basis = 'published'
join int_run_scoring as current on current.run_file = runs.run_file and current.round = runs.round
    and current.rules_basis = 'current'
-- a run's energy: every power log of power/<result>/ adds its share; one log without one leaves the run without
left join (
    select
        round,
        run_file,
        count(*) as logs,
        any_value(measurement_type) filter (where kind = 'node') as measurement_type,
        case when count(energy_j) = count(*) then sum(energy_j) end as energy_j,
        arg_min(energy_null_reason || ' (' || power_file || ')', power_file) filter (where energy_j is null)
            as energy_null_reason
    from fct_power_log
    where run_file is not null
    group by all
) as power on power.run_file = runs.run_file and power.round = runs.round
