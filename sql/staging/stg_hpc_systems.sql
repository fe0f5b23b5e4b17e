-- model: stg_hpc_systems
-- kind: view
-- grain: round, submitter, system
-- depends on: raw_hpc_systems
-- description: One row per MLPerf HPC system description file.
-- One row per MLPerf HPC system description file (`<org>/systems/<system>.json`).
select
    round,
    submitter,
    system,
    system_name,
    division,
    availability,
    availability_category,
    accelerator_model_name,
    accelerators_per_node,
    number_of_nodes,
    accelerator_count,
    host_processor_model_name,
    host_processors_per_node,
    framework,
    source_file,
    values_nulled
from raw_hpc_systems
