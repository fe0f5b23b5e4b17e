-- tests: mart_cost_to_train_coverage
-- severity: structural
-- description: Every round and accelerator with results but no cost says why; counts add up.
-- Every round and accelerator with results but no cost says why; counts add up.
select *
from mart_cost_to_train_coverage
where (uncosted_results > 0 and no_cost_reason is null)
    or costed_results + uncosted_results <> scored_results
    or costed_results > scored_results
    or no_cost_reason = 'priced, but these results were not costed'
