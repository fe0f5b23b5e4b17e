-- tests: dim_system
-- severity: plausibility
-- description: Systems files with values validation refused (nulled with the reason, the system kept).
select round, submitter, system, values_nulled as reason
from dim_system
where values_nulled is not null
