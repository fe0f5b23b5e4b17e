-- tests: fct_training_run
-- severity: plausibility
-- description: Runs with values validation refused (nulled with the reason, the run kept) or a samples-per-epoch that disagrees with the dataset table.
select round, submitter, system, benchmark, run_file, coalesce(values_nulled, samples_per_epoch_flag) as reason
from fct_training_run
where values_nulled is not null or samples_per_epoch_flag is not null
