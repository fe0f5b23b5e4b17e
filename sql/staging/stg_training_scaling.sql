-- model: stg_training_scaling
-- kind: view
-- grain: round, submitter, system, benchmark
-- depends on: raw_training_scaling
-- description: The RCP scaling factor of each benchmark folder that has a scaling.json.
-- The RCP scaling factor of a benchmark folder that has a scaling.json.
select round, submitter, system, benchmark, scaling_factor, scaling_file, scaling_problem
from raw_training_scaling
