-- No fan-out: one row per system within its scaling family (framework family included).
select round, submitter, benchmark, accelerator, division, framework_family, system, count(*) as n
from mart_scaling_efficiency
group by all
having count(*) > 1
