-- tests: mart_scaling_efficiency
-- severity: structural
-- description: Base rows have efficiency 1; efficiencies and speedups positive; one base per family.
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
select 'bases per family <> 1', round, submitter, benchmark, accelerator, division, base_system
from mart_scaling_efficiency
group by round, submitter, benchmark, accelerator, division, framework_family, base_system
having count(*) filter (where is_base) <> 1
union all
select 'same-size row with an efficiency', round, submitter, benchmark, accelerator, division, system
from mart_scaling_efficiency
where not is_base and not is_scaling_pair
    and (convergence_scaling_efficiency is not null or weak_scaling_efficiency is not null)
