-- model: fct_run_event
-- kind: view
-- grain: round, run_file, lineno
-- depends on: stg_mlperf_events, stg_mlperf_runs
-- description: One row per timeline event of a result log, with its offset from run_start.
-- One row per timeline event of a result log, in log order, with its offset from run_start.
-- A view: the ~10^6 events are stored once (raw_mlperf_events), not twice; a query over all of them
-- takes milliseconds.
select
    events.* replace (try_cast(events.samples_count as bigint) as samples_count),  -- a count
    (events.time_ms - runs.run_start_ms) / 1000.0 as seconds_since_run_start
from stg_mlperf_events as events
left join stg_mlperf_runs as runs using (run_file, round)
