-- export: mlcommons_summary_inference
-- grain: round, division, submitter, system, model, scenario, location
-- depends on: fct_inference_result, dim_inference_system
-- description: Every Inference result LoadGen judged VALID, with its system's facts: one summary_results.json record each, numbered in this order within its round.
-- One record per result: folders whose Locations differ only in case spell one result (ingestion publishes one of
-- them, and a structural test holds it: sql/tests/fct_inference_result_one_per_spelling.sql); a warehouse that holds
-- two anyway exports neither, rather than two records of one result.
select r.*, s.host_processor_model_name, s.host_processors_per_node, s.accelerators_per_node
from fct_inference_result as r
left join dim_inference_system as s using (round, division, submitter, system)
where r.valid
qualify count(*) over (partition by r.round, lower(r.location)) = 1
order by round_order(r.round), r.division, r.submitter, r.system, r.model, r.scenario, r.location
