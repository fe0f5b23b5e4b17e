-- model: stg_training_runs
-- kind: view
-- grain: round, run_file
-- depends on: raw_training_runs
-- description: One row per result log, typed, with run_identity and where each run is first seen.
-- One row per result log, typed and renamed from raw_training_runs (all rounds).
-- run_identity: the same run is the same start and stop instant (re-published logs often gain or
-- lose a few lines, so their bytes differ), else the same bytes (log_sha256).
-- first_seen_*: where that run appears first over every loaded round: the earliest round, then the
-- first submitter and system by name. Rounds re-publish earlier rounds' logs.
with runs as (
    select
        *,
        coalesce(run_start_ms::varchar || '-' || run_stop_ms::varchar, log_sha256, round || '/' || run_file) as run_identity,
        round_order(round) as round_order
    from raw_training_runs
)

select
    round,
    submitter,
    system,
    benchmark,
    run_file,
    regexp_extract(run_file, '[^/]+$') as run_file_name,
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
    convergence_progress,
    convergence_counted_in,
    convergence_source,
    convergence_null_reason,
    seed,
    benchmark_logged,
    steady_state_throughput,
    throughput_unit,
    log_lines,
    mllog_lines,
    parse_errors,
    log_sha256,
    run_identity,
    first_value(round) over first_seen as first_seen_round,
    first_value(submitter) over first_seen as first_seen_submitter,
    first_value(system) over first_seen as first_seen_system,
    precision_logged,
    precision_evidence,
    precision_statements,
    precision_statement_unmapped,
    throughput_counting,
    progress_counted_in,
    throughput_null_reason,
    progress_offset,
    train_samples_logged,
    values_nulled,
    round_order
from runs
window first_seen as (partition by run_identity order by round_order, submitter, system, run_file)
