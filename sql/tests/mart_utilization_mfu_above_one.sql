-- tests: mart_utilization
-- severity: plausibility
-- description: Results whose MFU would exceed 1 against their precision's dense peak (nulled, with the reason).
select round, submitter, system, benchmark, precision, precision_source, mfu_null_reason as reason
from mart_utilization
where mfu_null_reason like 'MFU % above 1%'
