-- model: dim_benchmark_dataset
-- kind: table
-- grain: benchmark, first_round
-- depends on: raw_benchmark_dataset_seed
-- description: The training set of each benchmark by round, with its samples per epoch and a source.
-- columns:
--   benchmark varchar
--   first_round varchar: the first round that trained on this dataset
--   last_round varchar: the last round that did (NULL: still current)
--   first_round_order integer: first_round as a sortable number (round_order())
--   last_round_order integer: last_round as a sortable number (NULL: still current)
--   dataset varchar: what the training set is
--   samples_per_epoch double: samples in one pass over it (one epoch)
--   source varchar: where samples_per_epoch comes from
-- A benchmark keeps its name when its dataset changes (ssd: COCO until v1.1, OpenImages for RetinaNet
-- from v2.0), so the samples of an epoch are dated. Input: pipelines/lib/reference/benchmark_datasets.csv.
select
    trim(benchmark) as benchmark,
    trim(first_round) as first_round,
    nullif(trim(last_round), '') as last_round,
    round_order(trim(first_round)) as first_round_order,
    round_order(nullif(trim(last_round), '')) as last_round_order,
    dataset,
    try_cast(samples_per_epoch as double) as samples_per_epoch,
    source
from raw_benchmark_dataset_seed
where nullif(trim(benchmark), '') is not null
