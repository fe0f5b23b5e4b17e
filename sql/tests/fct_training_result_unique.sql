-- No fan-out: one result per (round, submitter, system, benchmark).
select round, submitter, system, benchmark, count(*) as n
from fct_training_result
group by all
having count(*) > 1
