-- model: stg_training_rcp
-- kind: view
-- grain: round, submitter, system, benchmark
-- depends on: raw_training_rcp
-- description: The RCP checker's verdict on each closed-division result, as the round's own release gives it.
-- One row per closed-division result of a round whose release has an RCP checker (1.0 on): the label the
-- summarizer prints (Pass, Fail, Interp. Fail, Missing, No RCP, Unknown state; NULL: it leaves the cell
-- empty), the checker's message, and the factor it would write into scaling.json (NULL: none). Computed from
-- the logs and the release's RCP files (pipelines/lib/mlperf/rcp.py): MLCommons' code is read as data, never run.
select round, submitter, system, benchmark, rcp_check, rcp_passed, rcp_message, rcp_norm_factor,
    rcp_scaling_written, rcp_gbs, rcp_samples_to_converge, rcp_rules
from raw_training_rcp
