-- model: int_submitter_cloud
-- kind: table
-- grain: submitter, provider
-- depends on: stg_training_systems, stg_training_runs, raw_cloud_provider_seed
-- description: Which MLPerf submitters are a cloud themselves: the one definition of the native-cloud rule.
-- The rule: a submitter (results folder name) is the cloud `provider` when its lower-case name contains
-- one of that provider's `submitter_fragment`s in pipelines/lib/reference/cloud_providers.csv (the seed
-- raw_cloud_provider_seed): Google → gcp, Microsoft/Azure → azure, ... A provider absent from the
-- seed has no native submitter. Read by mart_cost_to_train (is_native_cloud) and dim_system (a bare
-- "available" system of a cloud is available in that cloud).
with submitters as (
    select submitter from stg_training_systems
    union
    select submitter from stg_training_runs
),

fragments as (
    select distinct lower(trim(provider)) as provider, lower(trim(submitter_fragment)) as fragment
    from raw_cloud_provider_seed
    where coalesce(trim(submitter_fragment), '') <> ''
)

select distinct s.submitter, f.provider
from submitters as s
join fragments as f on contains(lower(s.submitter), f.fragment)
where s.submitter is not null
