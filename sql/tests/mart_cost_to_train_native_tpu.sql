-- tests: mart_cost_to_train
-- severity: structural
-- description: Google's own TPU results priced on gcp are native-cloud rows, whatever the price source.
-- Google's own TPU results priced on gcp are native-cloud rows, whatever the price source.
select round, submitter, system, provider, price_source
from mart_cost_to_train
where accelerator like 'google-tpu-%' and provider = 'gcp' and lower(submitter) like '%google%'
    and not is_native_cloud
