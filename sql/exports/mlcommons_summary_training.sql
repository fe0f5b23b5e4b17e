-- export: mlcommons_summary_training
-- grain: round, submitter, system, benchmark
-- depends on: fct_training_result, dim_system
-- description: Every Training result with a score as published, with its system's facts: one record of MLCommons' summary_results.json each (lib/warehouse/mlcommons_summary.py makes the records), numbered in this order within its round.
select r.round, r.submitter, r.system, r.benchmark, r.division, r.score_minutes, r.energy_to_train_j,
       r.energy_null_reason, s.system_name, s.availability_category, s.number_of_nodes, s.host_processor_model_name,
       s.host_processors_per_node, s.accelerator_model_name, s.accelerators_per_node, s.framework
from fct_training_result as r
left join dim_system as s using (round, submitter, system)
where r.score_minutes is not null
order by round_order(r.round), r.submitter, r.system, r.benchmark
