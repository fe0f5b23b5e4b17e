-- tests: fct_training_run
-- description: One run row per staged result file: nothing lost or fanned out.
select (select count(*) from fct_training_run) as runs, (select count(*) from raw_mlperf_runs) as raw_runs
where runs <> raw_runs
