-- model: dim_system
-- kind: table
-- grain: round, submitter, system
-- depends on: stg_training_systems, raw_mlperf_accelerator_map, int_submitter_cloud, dim_submitter, dim_accelerator, raw_framework_family_seed
-- description: Systems of every round, with the accelerator key of dim_accelerator.
-- columns:
--   round varchar
--   submitter varchar
--   system varchar
--   system_name varchar
--   division varchar
--   availability varchar
--   availability_category varchar
--   accelerator_model_name varchar
--   accelerator varchar
--   accelerator_mapping varchar: mapped, deliberately_unmapped (CPU-only systems, on purpose) or unmapped (the unmapped_accelerators check names it)
--   accelerators_per_node bigint: accelerators per node, from the systems file
--   number_of_nodes bigint: nodes, from the systems file
--   accelerator_count bigint
--   host_processor_model_name varchar: the host CPU, as the systems file names it
--   host_processors_per_node bigint: host CPUs per node
--   framework varchar: the software stack as the systems file states it
--   submitter_declared varchar: the submitter the systems file itself states (may differ from the folder's spelling)
--   official_row_expected boolean: the systems file has every field MLCommons' results table needs
--   repaired_keys varchar: systems-file keys read under a corrected spelling (key->normalised key)
--   source_file varchar: the systems file inside the round's archive
--   precision_stated varchar: the training format the systems file states (fp8, bf16, fp4; NULL: not stated)
--   precision_evidence varchar: the systems-file text that states it
--   organization varchar
--   accelerator_memory_gb double: memory per accelerator: the GB the name states (an H100 96GB), else the reference part's
--   accelerator_memory_source varchar: name or reference part
--   framework_family varchar: the software family: the system folder name decides first, then the description's framework; several there and none in the name: mixed(...); none: the framework text
--   values_nulled varchar: values of the systems file refused by validation, nulled, with the reason
-- Systems of every round, keyed by (round, submitter, system); `system` is the file stem,
-- equal to the results folder name.
with families as (
    select framework_family, pattern from raw_framework_family_seed
),

system_frameworks as (
    select
        s.round,
        s.submitter,
        s.system,
        list_sort(list_distinct(list(f.framework_family) filter (
            where regexp_matches(lower(s.system), f.pattern)))) as in_name,
        list_sort(list_distinct(list(f.framework_family) filter (
            where regexp_matches(lower(coalesce(s.framework, '')), f.pattern)))) as in_description,
        any_value(s.framework) as framework
    from stg_training_systems as s
    cross join families as f
    group by all
),

system_family as (
    select
        round,
        submitter,
        system,
        case
            when len(in_name) = 1 then in_name[1]
            when len(in_description) = 1 then in_description[1]
            when len(in_description) > 1 then 'mixed(' || array_to_string(in_description, ',') || ')'
            else coalesce(nullif(lower(trim(framework)), ''), 'unknown')
        end as framework_family
    from system_frameworks
)

select
    s.round,
    s.submitter,
    s.system,
    s.system_name,
    s.division,
    s.availability,
    -- a bare "available" (Google Cloud TPU in v1.1/v2.0): in the cloud when the submitter is a cloud
    case
        when s.availability_category <> 'available' then s.availability_category
        when exists (select 1 from int_submitter_cloud as c where c.submitter = s.submitter) then 'cloud'
        else 'on-premise'
    end as availability_category,
    s.accelerator_model_name,
    map.accelerator,
    case
        when map.accelerator is not null then 'mapped'
        when map.deliberately_unmapped then 'deliberately_unmapped'
        else 'unmapped'
    end as accelerator_mapping,
    s.accelerators_per_node,
    s.number_of_nodes,
    s.accelerator_count,
    s.host_processor_model_name,
    s.host_processors_per_node,
    s.framework,
    s.submitter_declared,
    s.official_fields_missing is null as official_row_expected,
    s.repaired_keys,
    s.source_file,
    -- the training format the systems file states (fp8/bf16/fp4; NULL: not stated) and where
    s.precision_stated,
    s.precision_evidence,
    sub.organization,
    coalesce(try_cast(regexp_extract(s.accelerator_model_name, '(?i)(\d+)\s*GB', 1) as double), a.memory_gb)
        as accelerator_memory_gb,
    case
        when try_cast(regexp_extract(s.accelerator_model_name, '(?i)(\d+)\s*GB', 1) as double) is not null then 'name'
        when a.memory_gb is not null then 'reference part'
    end as accelerator_memory_source,
    coalesce(f.framework_family, 'unknown') as framework_family,
    s.values_nulled
from stg_training_systems as s
left join raw_mlperf_accelerator_map as map using (accelerator_model_name, system_name)
left join dim_submitter as sub on sub.submitter = s.submitter
left join dim_accelerator as a on a.accelerator = map.accelerator
left join system_family as f on f.round = s.round and f.submitter = s.submitter and f.system = s.system
