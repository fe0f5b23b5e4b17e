-- tests: fct_training_run
-- severity: plausibility
-- description: Benchmarks of a round whose throughputs were nulled: median steady-state ÷ end-to-end outside [0.9, 1.5].
select round, benchmark, count(*) as runs, any_value(throughput_null_reason) as reason
from fct_training_run
where throughput_null_reason like 'median steady-state%'
group by all
