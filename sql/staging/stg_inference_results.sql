-- model: stg_inference_results
-- kind: view
-- grain: round, location
-- depends on: raw_inference_results
-- description: One row per MLPerf Inference result (a performance run's LoadGen summary and detail log), typed.
-- One row per MLPerf Inference result: the performance run of one (division, submitter, system, model, scenario
-- folder), its metric read as the round's submission checker reads it, by pipelines/lib/mlperf/inference.py.
select * exclude (drop_reason), drop_reason as invalid_reason
from raw_inference_results
