-- model: fct_run_event
-- kind: view
-- grain: round, run_file, lineno
-- depends on: stg_training_events, stg_training_runs
-- description: One row per timeline event of a result log, with its offset from run_start.
-- columns:
--   round varchar
--   submitter varchar
--   system varchar
--   benchmark varchar
--   run_file varchar
--   lineno bigint: the line number in the result log
--   time_ms double: the event's time stamp, ms since the epoch
--   key varchar: the MLLOG key (run_start, block_start, eval_accuracy, epoch_stop, ...)
--   value double: the event's value where it is a number (an eval_accuracy's accuracy, ...)
--   epoch_num double: the metadata epoch_num (epochs, or samples or tokens in some benchmarks' logs)
--   first_epoch_num double: the metadata first_epoch_num of a block
--   epoch_count double: the metadata epoch_count of a block
--   samples_count bigint: the metadata samples_count (a block's samples, or a running total)
--   status varchar: the metadata status (run_stop: success or aborted)
--   seconds_since_run_start double: seconds from the run's run_start to this event
-- One row per timeline event of a result log, in log order, with its offset from run_start.
-- A view: the ~10^6 events are stored once (raw_training_events), not twice; a query over all of them
-- takes milliseconds.
select
    events.* replace (try_cast(events.samples_count as bigint) as samples_count),  -- a count
    (events.time_ms - runs.run_start_ms) / 1000.0 as seconds_since_run_start
from stg_training_events as events
left join stg_training_runs as runs using (run_file, round)
