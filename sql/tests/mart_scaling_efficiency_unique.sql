-- No fan-out: one row per system within its scaling family.
select round, submitter, benchmark, accelerator, division, system, count(*) as n
from mart_scaling_efficiency
group by all
having count(*) > 1
