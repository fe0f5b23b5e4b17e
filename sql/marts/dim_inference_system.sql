-- model: dim_inference_system
-- kind: table
-- grain: round, division, submitter, system
-- depends on: stg_inference_systems, raw_mlperf_accelerator_map
-- description: Systems of every MLPerf Inference round, with the accelerator key of dim_accelerator.
-- columns:
--   suite varchar: always 'inference'
--   round varchar: the Inference round
--   division varchar: the division folder the systems file is in (closed, open, network)
--   submitter varchar: the submitting organization's folder
--   system varchar: the systems file's stem (the results folder name)
--   system_name varchar: the system's name in the systems file
--   system_type varchar: datacenter, edge or both, as the systems file states it
--   availability varchar: as the systems file states it (its status)
--   accelerator_model_name varchar: as the systems file names it
--   accelerator varchar: the accelerator key of dim_accelerator, mapped as Training's systems are
--   accelerator_mapping varchar: mapped, mixed (several accelerator kinds in one system: no key), cpu_only (no accelerator), deliberately_unmapped or unmapped
--   accelerators_per_node bigint: accelerators per node, from the systems file
--   number_of_nodes bigint: nodes, from the systems file
--   accelerator_count bigint: accelerators of the whole system (0: CPU-only)
--   host_processor_model_name varchar: the host CPU, as the systems file names it
--   host_processors_per_node bigint: host CPUs per node
--   framework varchar: the software stack as the systems file states it
--   source_file varchar: the systems file inside the round's archive
select
    'inference' as suite,
    s.round,
    s.division_folder as division,
    s.submitter,
    s.system,
    s.system_name,
    s.system_type,
    s.availability,
    s.accelerator_model_name,
    case when not mixed then map.accelerator end as accelerator,
    case when mixed then 'mixed' else system_accelerator_mapping(map.accelerator, map.deliberately_unmapped,
        s.accelerators_per_node, s.accelerator_count) end as accelerator_mapping,
    s.accelerators_per_node,
    s.number_of_nodes,
    coalesce(s.accelerator_count, case when s.accelerators_per_node = 0 then 0 end) as accelerator_count,
    s.host_processor_model_name,
    s.host_processors_per_node,
    s.framework,
    s.source_file
from (
    -- a heterogeneous system lists its parts with their counts: "MI300X 192GB (x32), MI325X 256GB (x16)"
    select *, coalesce(regexp_matches(accelerator_model_name, '\(x\d+\)\s*,'), false) as mixed
    from stg_inference_systems
) as s
left join raw_mlperf_accelerator_map as map using (accelerator_model_name, system_name)
