-- model: dim_rules_release
-- kind: table
-- grain: suite, round
-- depends on: stg_training_rules, stg_hpc_rules
-- description: Which mlcommons/logging release judged each Training and HPC round, how it was found and trusted.
-- columns:
--   suite varchar: training or hpc (vocabulary suite)
--   round varchar
--   ref varchar: the mlcommons/logging git ref (a tag or a commit) whose rules judged the round (NULL: no release judges it, Training v0.5)
--   ref_source varchar: how the ref was found (vocabulary rules_ref_source): reviewed (rules_refs.csv), release_tag or default_branch (discovered), setting, stand_in
--   rule_folder varchar: the rule folder of that release the runs were checked against (training_6.0.0, hpc_3.0.0, 0.6.0)
--   provisional boolean: the folder is not the round's own: the round's scores are provisional until a release ships its rules
--   why varchar: why this ref (and, when provisional, why it is not the round's own rules)
--   trust varchar: how the release's content is trusted: the digest rules_refs.csv pins, or pinned on first use in the warehouse's own record (raw/rules/record.json)
-- Every round's rules, in one place: `ruleset_ref` of the fact tables names the ref, this table says how it
-- was chosen. A round the reviewed table (pipelines/lib/mlperf/rules_refs.csv) does not list takes the newest
-- release tag of its own line that ships its rule folder, else the default branch's head; a ref the table
-- does not list is trusted on first use (docs: Scoring).
select 'training' as suite, round, ref, ref_source, rule_folder, provisional, why, trust from stg_training_rules
union all
select 'hpc' as suite, round, ref, ref_source, rule_folder, provisional, why, trust from stg_hpc_rules
