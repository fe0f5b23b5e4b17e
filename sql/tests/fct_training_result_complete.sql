-- tests: fct_training_result
-- severity: structural
-- description: Every benchmark folder with result logs has its result row: no published result goes missing.
select raw.round, raw.submitter, raw.system, raw.benchmark, count(*) as run_files
from raw_training_runs as raw
left join fct_training_result as r using (round, submitter, system, benchmark)
where r.round is null
group by all
