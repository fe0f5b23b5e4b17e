-- model: fct_power_log
-- kind: table
-- grain: round, power_file
-- depends on: stg_training_power, stg_training_runs
-- description: One row per power log of a power submission, with the energy it adds to its run, in joules.
-- columns:
--   round varchar
--   submitter varchar
--   system varchar
--   benchmark varchar
--   result_name varchar: the result file the log measures (result_0, ...), its folder under power/
--   run_file varchar: that result log's path (NULL: the archive has no such result file)
--   power_file varchar: the power log's path inside the round's archive
--   kind varchar: node (a node's power meter readings) or sw (the interconnect's estimated power)
--   power_semantics varchar: the release whose power rules read the log (4.0: in file order; 4.1: sorted, readings between start and stop)
--   measurement_type varchar: AC or DC: as the log's conversion_eff line states it, else as the submitter or system name says (smc-ac-power)
--   measurement_type_source varchar: log or name (NULL: neither says)
--   readings bigint: power readings that count
--   null_readings bigint: readings whose value is not a number, skipped (the next reading covers the gap)
--   hosts bigint: distinct hosts whose readings the node log holds
--   conversion_eff double: the AC/DC conversion efficiency applied (1.0 when the log states none)
--   conversion_eff_logged boolean: the log states its conversion efficiency
--   interconnect_power_est_w double: a switch log's estimated power, W (NULL: the log states none, and adds 0 W)
--   window_start_ms double: power_measurement_start, ms since the epoch
--   window_stop_ms double: the end of the measured window as the release reads it, ms since the epoch
--   window_seconds double: the measured window's length, s
--   stop_logged boolean: the log has a power_measurement_stop
--   agg_power_w_ms double: Σ power × Δt over the window's readings, W·ms
--   mean_power_w double: the node's mean power over the window, W (agg_power_w_ms ÷ window)
--   time_to_train_ms double: the run's run_stop − run_start, ms
--   energy_j double: the energy the log adds to its run, J: node: eff × Σ P·Δt × time to train ÷ window ÷ 1000; switch: eff × estimate × time to train ÷ 1000
--   energy_flag varchar: quirks of the log that the energy works around, or NULL
--   energy_null_reason varchar: why energy_j is NULL
--   values_nulled varchar: values of the log refused by validation, nulled, with the reason
-- The official scorer (mlperf_logging.result_summarizer) computes a run's energy from every node and
-- switch log in power/<result>/; this table holds each log's share. A run's energy is the sum
-- (fct_training_run.energy_j), a result's the olympic average times the scaling factor
-- (fct_training_result.energy_to_train_j).
with logs as (
    select
        p.*,
        r.run_file,
        r.run_stop_ms - r.run_start_ms as time_to_train_ms,
        case
            when regexp_matches(lower(p.submitter || '/' || p.system), '(^|[-_/])ac([-_/]|$)') then 'AC'
            when regexp_matches(lower(p.submitter || '/' || p.system), '(^|[-_/])dc([-_/]|$)') then 'DC'
        end as name_measurement_type
    from stg_training_power as p
    left join stg_training_runs as r
        on r.round = p.round and r.submitter = p.submitter and r.system = p.system and r.benchmark = p.benchmark
        and regexp_replace(r.run_file_name, '\.txt$', '') = p.result_name
)

select
    round,
    submitter,
    system,
    benchmark,
    result_name,
    run_file,
    power_file,
    kind,
    power_semantics,
    coalesce(measurement_type, name_measurement_type) as measurement_type,
    case when measurement_type is not null then 'log' when name_measurement_type is not null then 'name' end
        as measurement_type_source,
    readings,
    null_readings,
    hosts,
    conversion_eff,
    conversion_eff_logged,
    interconnect_power_est_w,
    window_start_ms,
    window_stop_ms,
    (window_stop_ms - window_start_ms) / 1000.0 as window_seconds,
    stop_logged,
    agg_power_w_ms,
    case when kind = 'node' and window_stop_ms > window_start_ms
        then agg_power_w_ms / (window_stop_ms - window_start_ms) end as mean_power_w,
    time_to_train_ms,
    case
        when time_to_train_ms is null or conversion_eff is null then null
        -- a switch log with no estimate adds nothing, as the official scorer counts it (energy_flag says so)
        when kind = 'sw' then conversion_eff * coalesce(interconnect_power_est_w, 0) * time_to_train_ms / 1000.0
        when window_stop_ms > window_start_ms
            then conversion_eff * agg_power_w_ms * time_to_train_ms / (window_stop_ms - window_start_ms) / 1000.0
    end as energy_j,
    problems as energy_flag,
    case
        when run_file is null then 'no result file ' || result_name || ' in the benchmark folder'
        when time_to_train_ms is null then 'the run has no run_start or run_stop'
        when conversion_eff is null then 'conversion_eff refused by validation'
        when kind = 'node' and window_start_ms is null then 'the node log has no power_measurement_start'
        when kind = 'node' and not (window_stop_ms > window_start_ms) then 'the node log''s measured window has no length'
        when kind = 'node' and agg_power_w_ms is null then 'the node log''s readings were refused by validation'
    end as energy_null_reason,
    values_nulled
from logs
