-- model: stg_inference_results
-- kind: view
-- grain: round, location
-- depends on: raw_inference_results
-- description: One row per MLPerf Inference result (a LoadGen performance summary), typed.
-- One row per MLPerf Inference result: the performance run's LoadGen summary of one (division,
-- submitter, system, model, scenario), parsed by pipelines/lib/mlperf/inference.py.
select * exclude (drop_reason), drop_reason as invalid_reason
from raw_inference_results
