-- model: dim_hpc_system
-- kind: table
-- grain: round, submitter, system
-- depends on: stg_hpc_systems, raw_mlperf_accelerator_map, dim_accelerator
-- description: Systems of every MLPerf HPC round, with the accelerator key of dim_accelerator.
-- columns:
--   suite varchar: always 'hpc' (Training's systems are dim_system)
--   round varchar: the HPC round
--   submitter varchar: the submitting organization's folder
--   system varchar: the systems file's stem (the results folder name)
--   system_name varchar: the system's name in the systems file
--   division varchar: closed or open
--   availability varchar: as the systems file states it
--   accelerator_model_name varchar: as the systems file names it (N/A, or empty, on CPU-only systems)
--   accelerator varchar: the accelerator key of dim_accelerator, mapped as Training's systems are
--   accelerator_mapping varchar: mapped, cpu_only (no accelerator: kept with 0 accelerators), deliberately_unmapped or unmapped
--   accelerators_per_node bigint: accelerators per node, from the systems file
--   number_of_nodes bigint: nodes, from the systems file
--   accelerator_count bigint: accelerators of the whole system (0: CPU-only)
--   accelerator_memory_gb double: memory per accelerator of the mapped part
--   host_processor_model_name varchar: the host CPU, as the systems file names it
--   host_processors_per_node bigint: host CPUs per node
--   framework varchar: the software stack as the systems file states it
--   source_file varchar: the systems file inside the round's archive
--   values_nulled varchar: values of the systems file refused by validation, nulled, with the reason
select
    'hpc' as suite,
    s.round,
    s.submitter,
    s.system,
    s.system_name,
    s.division,
    s.availability,
    s.accelerator_model_name,
    map.accelerator,
    system_accelerator_mapping(map.accelerator, map.deliberately_unmapped, s.accelerators_per_node,
                               s.accelerator_count) as accelerator_mapping,
    s.accelerators_per_node,
    s.number_of_nodes,
    coalesce(s.accelerator_count, case when s.accelerators_per_node = 0 then 0 end) as accelerator_count,
    a.memory_gb as accelerator_memory_gb,
    s.host_processor_model_name,
    s.host_processors_per_node,
    s.framework,
    s.source_file,
    s.values_nulled
from stg_hpc_systems as s
left join raw_mlperf_accelerator_map as map using (accelerator_model_name, system_name)
left join dim_accelerator as a on a.accelerator = map.accelerator
