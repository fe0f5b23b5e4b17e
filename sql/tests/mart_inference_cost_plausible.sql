-- tests: mart_inference_cost
-- severity: plausibility
-- description: Every priced LLM result costs between $0.001 and $100 per million tokens (outside: flagged, check the price row).
select round, location, usd_per_million, provider, sku, price_per_accelerator_hour_usd
from mart_inference_cost
where plausibility_flag is not null
