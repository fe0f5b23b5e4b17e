-- No fan-out: one row per result and price option.
select round, submitter, system, benchmark, provider, sku, region, pricing_model, count(*) as n
from mart_cost_to_train
group by all
having count(*) > 1
