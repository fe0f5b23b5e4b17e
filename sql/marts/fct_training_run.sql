-- Grain: one row per result file.
-- Inputs: stg_mlperf_runs, int_run_scoring.
-- `scored` = the run counts toward the score as published (it passed the round's own rules);
-- `in_olympic_mean` = it survived the olympic trimming too. The `*_current_rules` columns say the
-- same under today's pinned mlperf-logging package.
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
    runs.precision_evidence
from stg_mlperf_runs as runs
join int_run_scoring as published on published.run_file = runs.run_file and published.round = runs.round
    and published.rules_basis = 'published'
join int_run_scoring as current on current.run_file = runs.run_file and current.round = runs.round
    and current.rules_basis = 'current'
