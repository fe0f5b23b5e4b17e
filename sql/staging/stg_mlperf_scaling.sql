-- The RCP scaling factor of a benchmark folder that has a scaling.json.
select round, submitter, system, benchmark, scaling_factor, scaling_file, scaling_problem
from raw_mlperf_scaling
