-- tests: fct_training_run
-- severity: plausibility
-- description: Scored runs whose samples to converge lie outside their benchmark's absolute bounds (nulled, with the reason).
select round, submitter, system, benchmark, run_file, samples_to_converge_null_reason as reason
from fct_training_run
where scored and samples_to_converge_null_reason like '%outside the plausible%'
