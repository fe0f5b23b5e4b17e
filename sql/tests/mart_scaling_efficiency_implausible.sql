-- tests: mart_scaling_efficiency
-- severity: plausibility
-- description: Scaling pairs whose throughput efficiency was nulled as physically implausible (with the reason).
select round, submitter, benchmark, system, base_system, throughput_scaling_null_reason as reason
from mart_scaling_efficiency
where throughput_scaling_null_reason is not null
