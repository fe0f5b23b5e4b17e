-- tests: mart_cost_to_train
-- severity: structural
-- description: One price source per result, provider, accelerator and pricing model (API > list > catalog).
-- One price source per result, provider, accelerator and pricing model (API > list > catalog):
-- no result is costed twice by one provider for one offer.
select round, submitter, system, benchmark, provider, pricing_model, count(distinct price_source) as sources
from mart_cost_to_train
group by all
having count(distinct price_source) > 1
