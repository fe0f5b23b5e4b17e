select provider, sku, region, pricing_model, price_source, count(*) as n
from fct_cloud_price_current
group by all
having count(*) > 1
