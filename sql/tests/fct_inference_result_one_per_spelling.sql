-- tests: fct_inference_result
-- severity: structural
-- description: One result per division, submitter, system, model and scenario: no two folders of a round that differ only in case (Offline and offline) are both published.
-- Ingestion keeps the spelling MLCommons' layout names and quarantines the other (pipelines/lib/mlperf/inference.py).
select round, lower(location) as location_any_case, count(*) as results,
       string_agg(location, ', ' order by location) as locations
from fct_inference_result
group by round, lower(location)
having count(*) > 1
