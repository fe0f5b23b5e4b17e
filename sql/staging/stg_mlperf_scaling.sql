-- model: stg_mlperf_scaling
-- kind: view
-- grain: round, submitter, system, benchmark
-- depends on: raw_mlperf_scaling
-- description: The RCP scaling factor of each benchmark folder that has a scaling.json.
-- The RCP scaling factor of a benchmark folder that has a scaling.json.
select round, submitter, system, benchmark, scaling_factor, scaling_file, scaling_problem
from raw_mlperf_scaling
