-- model: stg_hpc_rules
-- kind: view
-- grain: round
-- depends on: raw_hpc_rules
-- description: The rules release that judged each HPC round: its ref, how it was found, whether it is provisional.
-- One row per HPC round (staged with the round): the mlcommons/logging ref whose rules judged its runs, how
-- the ref was found (vocabulary rules_ref_source), the rule folder used, and whether that folder is the
-- round's own (provisional when not: a newer round than any release ships, scored by the newest rules there are).
select round, ref, ref_source, rule_folder, provisional, why, trust
from raw_hpc_rules
