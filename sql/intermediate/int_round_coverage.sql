-- model: int_round_coverage
-- kind: view
-- grain: suite, round
-- depends on: fct_training_result, fct_hpc_result, fct_inference_result
-- description: Per suite and round: how many results there are, how many have a score as published, how many published scores today's rules would reject, and why the round's scores are provisional (what a refresh prints after it publishes).
-- A result has a score by its suite's own figure: Training a time to train; HPC a strong score or a weak
-- throughput; Inference a result LoadGen judged VALID whose metric could be derived (LoadGen judged it: no
-- rules release applies, so none is rejected by today's rules and none is provisional).
select
    'training' as suite,
    round,
    count(*) as results,
    count(score_minutes) as scored,
    count(*) filter (where score_minutes is not null and score_minutes_current_rules is null)
        as rejected_by_current_rules,
    any_value(rules_provisional_reason) as provisional
from fct_training_result
group by round
union all
select
    'hpc' as suite,
    round,
    count(*) as results,
    count(coalesce(score_minutes, models_per_minute)) as scored,
    count(*) filter (where score_minutes is not null and score_minutes_current_rules is null
                     or models_per_minute is not null and models_per_minute_current_rules is null)
        as rejected_by_current_rules,
    any_value(rules_provisional_reason) as provisional
from fct_hpc_result
group by round
union all
select
    'inference' as suite,
    round,
    count(*) as results,
    count(*) filter (where valid) as scored,
    0 as rejected_by_current_rules,
    null::varchar as provisional
from fct_inference_result
group by round
