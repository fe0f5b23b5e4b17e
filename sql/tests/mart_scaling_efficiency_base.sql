-- Base rows have efficiency 1; every efficiency and speedup is positive; one base per family.
select 'base efficiency <> 1' as problem, round, submitter, benchmark, accelerator, division, system
from mart_scaling_efficiency
where is_base and (abs(convergence_scaling_efficiency - 1) > 1e-9 or abs(weak_scaling_efficiency - 1) > 1e-9
    or abs(speedup - 1) > 1e-9 or system <> base_system)
union all
select 'non-positive efficiency', round, submitter, benchmark, accelerator, division, system
from mart_scaling_efficiency
where not (speedup > 0 and convergence_scaling_efficiency > 0 and size_ratio >= 1)
    or weak_scaling_efficiency <= 0
union all
select 'bases per family <> 1', round, submitter, benchmark, accelerator, division, null
from mart_scaling_efficiency
group by round, submitter, benchmark, accelerator, division
having count(*) filter (where is_base) <> 1
