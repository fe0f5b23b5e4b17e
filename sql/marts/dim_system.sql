-- model: dim_system
-- kind: table
-- grain: round, submitter, system
-- depends on: stg_mlperf_systems, raw_mlperf_accelerator_map, int_submitter_cloud
-- description: Systems of every round, with the accelerator key of dim_accelerator.
-- Systems of every round, keyed by (round, submitter, system); `system` is the file stem,
-- equal to the results folder name.
select
    round,
    submitter,
    system,
    system_name,
    division,
    availability,
    -- a bare "available" (Google Cloud TPU in v1.1/v2.0): in the cloud when the submitter is a cloud
    case
        when availability_category <> 'available' then availability_category
        when exists (select 1 from int_submitter_cloud as c where c.submitter = stg_mlperf_systems.submitter) then 'cloud'
        else 'on-premise'
    end as availability_category,
    accelerator_model_name,
    map.accelerator,
    case
        when map.accelerator is not null then 'mapped'
        when map.deliberately_unmapped then 'deliberately_unmapped'
        else 'unmapped'
    end as accelerator_mapping,
    accelerators_per_node,
    number_of_nodes,
    accelerator_count,
    host_processor_model_name,
    host_processors_per_node,
    framework,
    submitter_declared,
    official_fields_missing is null as official_row_expected,
    repaired_keys,
    source_file,
    -- the training format the systems file states (fp8/bf16/fp4; NULL: not stated) and where
    precision_stated,
    precision_evidence
from stg_mlperf_systems
left join raw_mlperf_accelerator_map as map using (accelerator_model_name, system_name)
