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
from raw_mlperf_events
