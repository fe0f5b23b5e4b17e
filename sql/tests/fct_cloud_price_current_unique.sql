select provider, sku, region, pricing_model, count(*) as n
from fct_cloud_price_current
group by all
having count(*) > 1
