-- tests: mart_cost_to_train
-- severity: structural
-- description: Costs are positive and equal score hours × accelerators × price per accelerator-hour.
-- Costs are positive and equal score hours × accelerators × price per accelerator-hour.
select *
from mart_cost_to_train
where not (cost_to_train_usd > 0 and price_per_accelerator_hour_usd > 0)
    or abs(cost_to_train_usd - score_minutes / 60.0 * accelerator_count * price_per_accelerator_hour_usd)
        > 1e-9 * cost_to_train_usd
