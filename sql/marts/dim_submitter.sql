-- model: dim_submitter
-- kind: table
-- grain: submitter
-- depends on: stg_training_runs, stg_training_systems, raw_submitter_alias_seed
-- description: Every submitter folder spelling, with the one spelling of its organization and why.
-- columns:
--   submitter varchar
--   organization varchar: the organization: the alias table's (submitter_aliases.csv, matched case-insensitively), else the spelling most results use
--   organization_source varchar: the alias table's source, or 'case-insensitive: ...' naming the spellings taken as one
--   rounds varchar: the rounds this spelling appears in
-- Results folders spell one organization several ways (NVIDIA/nvidia, Krai/krai) and were renamed
-- (DellEMC → Dell; smc, smc-ac-power, smc-dc-power are Supermicro). `submitter` stays the folder's
-- spelling everywhere (it is part of every result's key: smc and smc-ac-power publish the same system
-- names); `organization` is the one spelling to group by.
with spellings as (
    select submitter, round, count(*) as results
    from (
        select submitter, round from stg_training_runs
        union all
        select submitter, round from stg_training_systems
    )
    where submitter is not null
    group by all
),

per_spelling as (
    select
        submitter,
        sum(results) as results,
        max(round_order(round)) as latest_round_order,
        string_agg(distinct round, ', ' order by round) as rounds
    from spellings
    group by submitter
),

aliases as (
    select lower(trim(spelling)) as spelling, trim(organization) as organization, source
    from raw_submitter_alias_seed
    where nullif(trim(spelling), '') is not null
),

case_groups as (
    select
        lower(submitter) as spelling,
        first_value(submitter) over (
            partition by lower(submitter) order by results desc, latest_round_order desc, submitter
        ) as organization,
        string_agg(submitter, ' / ') over (partition by lower(submitter) order by submitter
            rows between unbounded preceding and unbounded following) as spellings
    from per_spelling
    qualify row_number() over (partition by lower(submitter) order by submitter) = 1
)

select
    p.submitter,
    coalesce(a.organization, g.organization) as organization,
    coalesce(a.source, 'case-insensitive: ' || g.spellings || ' are one name; the spelling most results use') as organization_source,
    p.rounds
from per_spelling as p
left join aliases as a on a.spelling = lower(p.submitter)
left join case_groups as g on g.spelling = lower(p.submitter)
