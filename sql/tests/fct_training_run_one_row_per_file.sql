-- tests: fct_training_run
-- severity: structural
-- description: One run row per staged result file in every round: nothing lost or fanned out.
select round, runs, raw_runs
from (
    select raw.round, count(distinct raw.run_file) as raw_runs,
        (select count(*) from fct_training_run as f where f.round = raw.round) as runs
    from raw_training_runs as raw
    group by raw.round
)
where runs <> raw_runs
