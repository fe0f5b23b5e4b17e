-- model: int_round_unscored
-- kind: view
-- grain: suite, round, reason
-- depends on: fct_training_result, fct_hpc_result, fct_inference_result
-- description: Per suite and round, the results without a score as published, counted by kind of reason (what a refresh prints after each round's coverage line).
-- Counts and file names inside a reason ("too many runs dropped (2 > 1): 2 by compliance: ... (result_1.txt,
-- result_4.txt)", HPC's "(3 < 5)") would split one kind into many: they are left out of the kind.
select
    'training' as suite,
    round,
    coalesce(case
        when no_score_reason like 'too many runs dropped%' then 'too many runs dropped, most by '
            || trim(regexp_extract(no_score_reason, '^too many runs dropped \(\d+ > \d+\): \d+ by ([^:(]+)', 1))
        else no_score_reason
    end, 'unknown') as reason,
    count(*) as results
from fct_training_result
where score_minutes is null
group by all
union all
select
    'hpc' as suite,
    round,
    coalesce(regexp_replace(coalesce(no_score_reason, throughput_null_reason), ' \(\d+ [<>] \d+\)', ''), 'unknown')
        as reason,
    count(*) as results
from fct_hpc_result
where coalesce(score_minutes, models_per_minute) is null
group by all
union all
select
    'inference' as suite,
    round,
    coalesce(invalid_reason, 'unknown') as reason,
    count(*) as results
from fct_inference_result
where not valid
group by all
