-- model: int_accelerator_offer
-- kind: table
-- grain: accelerator, is_bookable
-- depends on: mart_price_offer
-- description: Each accelerator's cheapest current offer per accelerator-hour: the cheapest bookable one and the cheapest market one.
-- The one home of "an accelerator's cheapest price" for the HPC and Inference costs (a strong run, a million
-- tokens): the cheapest offer of mart_price_offer by price per accelerator-hour (ties: provider, region,
-- pricing model, SKU), once among bookable offers (the headline) and once among market ones.
select *
from mart_price_offer
qualify row_number() over (
    partition by accelerator, is_bookable
    order by price_per_accelerator_hour_usd, provider, region, pricing_model, sku
) = 1
