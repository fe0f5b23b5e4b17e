-- export: mlcommons_summary_hpc
-- grain: round, submitter, system, scale, benchmark
-- depends on: fct_hpc_result, dim_hpc_system, fct_hpc_run
-- description: Every HPC result with a strong score or a weak throughput, with its system's facts and whether its folder implies its scale: one summary_results.json record each, numbered in this order within its round.
select r.round, r.submitter, r.system, r.scale, r.benchmark, r.division, r.score_minutes, r.models_per_minute,
       r.energy_null_reason, s.system_name, s.availability, s.number_of_nodes, s.host_processor_model_name,
       s.host_processors_per_node, s.accelerator_model_name, s.accelerators_per_node, s.framework,
       (select bool_and(scale_implied) from fct_hpc_run as x where x.round = r.round and x.submitter = r.submitter
        and x.system = r.system and x.scale = r.scale and x.benchmark = r.benchmark) as scale_implied
from fct_hpc_result as r
left join dim_hpc_system as s using (round, submitter, system)
where coalesce(r.score_minutes, r.models_per_minute) is not null
order by round_order(r.round), r.submitter, r.system, r.scale, r.benchmark
