-- model: fct_hpc_run
-- kind: table
-- grain: round, run_file
-- depends on: stg_hpc_runs, int_hpc_run_scoring
-- description: MLPerf HPC runs: one row per result log, with whether it counts under each rule basis.
-- columns:
--   suite varchar: always 'hpc' (Training's runs are fct_training_run)
--   round varchar: the HPC round (v0.7, v1.0, ...: not a Training round)
--   submitter varchar: the submitting organization's folder
--   system varchar: the system folder, equal to the systems file's stem
--   scale varchar: strong (one model trained on the system) or weak (many models trained at once)
--   scale_implied boolean: true when the layout has no strong/weak folder (v0.7: every result is strong)
--   benchmark varchar: the benchmark folder (cosmoflow, deepcam, oc20, openfold, ...)
--   run_file varchar: the result log inside the round's archive
--   ruleset varchar: the rules folder that judged the run as published (hpc_X.Y.0)
--   ruleset_ref varchar: the mlcommons/logging ref of those rules
--   run_status varchar: run_stop's status as logged
--   time_to_train_minutes double: run_stop − run_start, minutes
--   run_start_ms double: run_start, ms since the epoch
--   run_stop_ms double: run_stop, ms since the epoch
--   global_batch_size double: the global batch size, as the log states it
--   number_of_nodes double: nodes one model trained on, as logged
--   accelerators_per_node double: accelerators per node, as logged (0: CPU-only)
--   instance_scale bigint: accelerators one model trained on: nodes × max(accelerators per node, 1), as the official scorer reads it
--   scored boolean: the run counts under the round's own rules (drop_reason is NULL)
--   drop_reason varchar: why the round's own rules do not count the run
--   in_olympic_mean boolean: a strong run inside the olympic mean that is the score
--   scored_current_rules boolean: the run counts under today's pinned mlperf-logging package
--   current_rules_drop_reason varchar: why today's rules do not count it
--   log_sha256 varchar: sha256 of the log file as published
--   parse_errors bigint: log lines that could not be parsed
select
    'hpc' as suite,
    r.round,
    r.submitter,
    r.system,
    r.scale,
    r.scale_implied,
    r.benchmark,
    r.run_file,
    r.ruleset,
    r.ruleset_ref,
    r.run_status,
    r.time_to_train_minutes,
    r.run_start_ms,
    r.run_stop_ms,
    r.global_batch_size,
    r.number_of_nodes,
    r.accelerators_per_node,
    r.instance_scale,
    p.scored,
    r.drop_reason,
    p.in_olympic_mean,
    c.scored as scored_current_rules,
    r.current_rules_drop_reason,
    r.log_sha256,
    r.parse_errors
from stg_hpc_runs as r
join int_hpc_run_scoring as p on p.round = r.round and p.run_file = r.run_file and p.rules_basis = 'published'
join int_hpc_run_scoring as c on c.round = r.round and c.run_file = r.run_file and c.rules_basis = 'current'
