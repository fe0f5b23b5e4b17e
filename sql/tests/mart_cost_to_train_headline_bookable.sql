-- tests: mart_cost_to_train_headline
-- severity: structural
-- description: Headline costs are bookable list prices (hyperscaler or neocloud, never spot) and the cheapest of them.
select h.round, h.submitter, h.system, h.benchmark, h.provider, h.provider_kind, h.pricing_model, h.cost_to_train_usd
from mart_cost_to_train_headline as h
where h.cost_to_train_usd is not null
    and (h.provider_kind not in ('hyperscaler', 'neocloud') or h.pricing_model = 'spot'
        or h.provider_kind not in (select value from raw_vocabulary_seed where vocabulary = 'provider_kind')
        or h.cost_to_train_usd > (
            select min(c.cost_to_train_usd) from mart_cost_to_train as c
            where c.round = h.round and c.submitter = h.submitter and c.system = h.system and c.benchmark = h.benchmark
                and c.is_bookable))
union all
select round, submitter, system, benchmark, null, null, null, null
from mart_cost_to_train_headline
where (cost_to_train_usd is null) <> (no_cost_reason is not null)
