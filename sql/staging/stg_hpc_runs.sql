-- model: stg_hpc_runs
-- kind: view
-- grain: round, run_file
-- depends on: raw_hpc_runs
-- description: One row per MLPerf HPC result log, typed (all HPC rounds).
-- One row per MLPerf HPC result log (raw_hpc_runs), with its instance scale: the accelerators one
-- model trains on (nodes × accelerators per node; a CPU-only node counts as one), as the official
-- scorer reads it for weak scaling.
select
    round,
    submitter,
    system,
    scale,
    scale_implied,
    benchmark,
    run_file,
    ruleset,
    ruleset_ref,
    passed_compliance,
    drop_reason,
    current_rules_drop_reason,
    status as run_status,
    run_start_ms,
    run_stop_ms,
    time_to_train_minutes,
    global_batch_size,
    number_of_nodes,
    accelerators_per_node,
    try_cast(number_of_nodes * greatest(accelerators_per_node, 1) as bigint) as instance_scale,
    benchmark_logged,
    log_lines,
    mllog_lines,
    parse_errors,
    log_sha256,
    values_nulled
from raw_hpc_runs
