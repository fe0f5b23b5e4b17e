-- tests: fct_training_run
-- severity: plausibility
-- description: Runs whose logs state a lowest numerical precision no spelling of precision_spellings.csv maps (no precision is guessed: their result has no MFU).
-- A new spelling or a new format: add it to pipelines/lib/reference/precision_spellings.csv once its meaning
-- is known (a format with a peak of its own needs that peak in accelerators.csv too).
select round, submitter, system, benchmark, run_file, precision_statement_unmapped as statement
from fct_training_run
where precision_statement_unmapped is not null
