-- model: dim_benchmark_dataset
-- kind: table
-- grain: benchmark, first_round
-- depends on: raw_benchmark_dataset_seed
-- description: The training set of each benchmark by round, with its samples per epoch and a source.
-- A benchmark keeps its name when its dataset changes (ssd: COCO until v1.1, OpenImages for RetinaNet
-- from v2.0), so the samples of an epoch are dated. Input: pipelines/lib/reference/benchmark_datasets.csv.
-- Columns:
--   benchmark          the benchmark (results folder name)
--   first_round        the first round that trained on this dataset
--   last_round         the last one (NULL: still current)
--   first_round_order, last_round_order  the same as round_order() numbers (last: NULL when current)
--   dataset            what the training set is
--   samples_per_epoch  samples in one pass over it (one epoch)
--   source             where that figure comes from
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
