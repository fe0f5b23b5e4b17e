-- tests: fct_training_result
-- severity: structural
-- description: Each published score is the olympic mean of its counted runs times its RCP factor, as the rules give.
with recomputed as (
    select round, submitter, system, benchmark,
        avg(time_to_train_minutes) filter (where in_olympic_mean) as olympic_mean,
        count(*) filter (where in_olympic_mean) as in_mean
    from fct_training_run
    group by all
)
select r.round, r.submitter, r.system, r.benchmark, r.score_minutes, c.olympic_mean, r.rcp_scaling_factor
from fct_training_result as r
join recomputed as c using (round, submitter, system, benchmark)
where r.score_minutes is not null
    and (c.in_mean <> r.runs_in_mean
        or abs(r.score_minutes - c.olympic_mean * r.rcp_scaling_factor) > 1e-9 * r.score_minutes)
