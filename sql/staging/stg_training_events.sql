-- model: stg_training_events
-- kind: view
-- grain: none: the raw event log as parsed (fct_run_event is keyed)
-- depends on: raw_training_events
-- description: Timeline events of every result log, typed.
-- Timeline events of every result log (run, init, block, epoch, eval).
select
    round,
    submitter,
    system,
    benchmark,
    run_file,
    lineno,
    time_ms,
    key,
    value,
    epoch_num,
    first_epoch_num,
    epoch_count,
    samples_count,
    status
from raw_training_events
