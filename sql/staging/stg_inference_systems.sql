-- model: stg_inference_systems
-- kind: view
-- grain: round, division_folder, submitter, system
-- depends on: raw_inference_systems
-- description: One row per MLPerf Inference systems file.
-- One row per MLPerf Inference systems file (`<division>/<org>/systems/<system>.json`).
select *
from raw_inference_systems
