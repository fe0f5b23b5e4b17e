-- model: dim_benchmark
-- kind: table
-- grain: benchmark
-- depends on: raw_benchmark_seed
-- description: One row per MLPerf Training benchmark: task, model FLOPs per sample, units, dataset size.
-- One row per MLPerf Training benchmark: what it trains, the model FLOPs one sample costs (with
-- how that figure was derived; NULL where no sound figure exists), and the unit its throughput is
-- measured in. Input: raw_benchmark_seed (pipelines/lib/reference/benchmarks.csv).
-- `convergence_unit` is the unit of a result's samples_to_converge for the benchmark
-- (the RCP checker's unit): tokens for gpt3, sequences/samples for the other language models,
-- epochs for the benchmarks that count epochs.
-- `throughput_unit` is the one unit of the runs' steady_state_throughput and
-- end_to_end_throughput for the benchmark, in every round; `block_work` says how a training
-- block's work is read from the logs. `dataset_size` (samples per epoch, with its source) converts
-- epochs to samples; `earlier_dataset_size` applies up to `earlier_dataset_last_round` (ssd was
-- SSD-ResNet34 on COCO until v1.0, RetinaNet on OpenImages since v2.0).
select
    trim(benchmark) as benchmark,
    task,
    model,
    try_cast(parameters as double) as parameters,
    convergence_unit,
    try_cast(tokens_or_samples_per_sample as double) as tokens_or_samples_per_sample,
    try_cast(model_flops_per_sample as double) as model_flops_per_sample,
    -- FLOPs per unit of samples_to_converge
    case
        when convergence_unit = 'tokens'
            then try_cast(model_flops_per_sample as double) / try_cast(tokens_or_samples_per_sample as double)
        when convergence_unit = 'samples' then try_cast(model_flops_per_sample as double)
        when convergence_unit = 'epochs'
            then try_cast(model_flops_per_sample as double) * try_cast(dataset_size as double)
    end as model_flops_per_convergence_unit,
    flops_derivation,
    source,
    throughput_unit,
    block_work,
    dataset,
    try_cast(dataset_size as double) as dataset_size,
    nullif(dataset_size_source, '') as dataset_size_source,
    try_cast(earlier_dataset_size as double) as earlier_dataset_size,
    nullif(earlier_dataset_last_round, '') as earlier_dataset_last_round,
    -- runs the official olympic mean drops at each end (the fastest, and the slowest not already dropped)
    try_cast(olympic_runs_dropped as integer) as olympic_runs_dropped
from raw_benchmark_seed
where nullif(trim(benchmark), '') is not null
