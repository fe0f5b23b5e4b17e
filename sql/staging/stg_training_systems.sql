-- model: stg_training_systems
-- kind: view
-- grain: round, submitter, system
-- depends on: raw_training_systems
-- description: One row per system description file.
-- One row per system description file.
select
    round,
    submitter,
    system,
    system_name,
    submitter_declared,
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
    official_fields_missing,
    repaired_keys,
    source_file,
    precision_stated,
    precision_evidence,
    values_nulled
from raw_training_systems
