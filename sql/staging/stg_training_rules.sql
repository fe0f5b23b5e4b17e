-- model: stg_training_rules
-- kind: view
-- grain: round
-- depends on: raw_training_rules
-- description: The rules release that judged each Training round: its ref, how it was found, whether it is provisional.
-- One row per Training round (staged with the round): the mlcommons/logging ref whose rules judged its runs, how
-- the ref was found (vocabulary rules_ref_source), the rule folder used, and whether that folder is the
-- round's own (provisional when not: a newer round than any release ships, scored by the newest rules there are).
select round, ref, ref_source, rule_folder, provisional, why, trust
from raw_training_rules
