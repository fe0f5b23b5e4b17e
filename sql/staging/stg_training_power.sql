-- model: stg_training_power
-- kind: view
-- grain: round, power_file
-- depends on: raw_training_power
-- description: One row per power log of a power submission, as the round's release reads it.
-- One row per power log (node meter readings, or the interconnect's estimated power), summarized by
-- pipelines/lib/mlperf/power.py under the power rules of the round's release (`power_semantics`).
select
    round,
    submitter,
    system,
    benchmark,
    result_name,
    power_file,
    kind,
    power_semantics,
    log_lines,
    readings,
    null_readings,
    hosts,
    measurement_type,
    conversion_eff,
    conversion_eff_logged,
    interconnect_power_est_w,
    window_start_ms,
    window_stop_ms,
    stop_logged,
    agg_power_w_ms,
    first_reading_ms,
    last_reading_ms,
    problems,
    values_nulled
from raw_training_power
