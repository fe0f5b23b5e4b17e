-- model: dim_benchmark
-- kind: table
-- grain: benchmark
-- depends on: raw_benchmark_seed, dim_benchmark_dataset
-- description: One row per MLPerf Training benchmark: task, model FLOPs per sample, units, bounds.
-- columns:
--   benchmark varchar
--   task varchar: what the benchmark trains for (language modelling, image classification, ...)
--   model varchar: the reference model (GPT-3 175B, ResNet-50, ...)
--   parameters double: the model's parameters (NULL: not used for a FLOPs figure)
--   convergence_unit varchar: the unit its logs count the convergence point in: samples, tokens or epochs (fct_training_run converts every unit to samples)
--   tokens_or_samples_per_sample double: tokens per sequence for the LLMs (a gpt3 sample is 2,048 tokens)
--   model_flops_per_sample double: model FLOPs to train on one sample (NULL: no sound figure; flops_derivation says why)
--   model_flops_per_convergence_unit double: the same per unit of convergence_unit (epochs: of the current dataset)
--   flops_derivation varchar: how the FLOPs figure was derived (e.g. 6 × parameters × tokens), or why there is none
--   source varchar: where the benchmark's reference figures come from
--   throughput_unit varchar: the unit of every throughput of the benchmark: its samples per second (images/s, tokens/s, ...)
--   block_work varchar: how a training block's work is read from the logs
--   dataset varchar: the current training set (dim_benchmark_dataset)
--   dataset_size double: samples in one epoch of the current training set
--   dataset_size_source varchar: where dataset_size comes from
--   earlier_dataset_size double: samples per epoch of the training set before the current one (NULL: it never changed)
--   earlier_dataset_last_round varchar: the last round that trained on the earlier training set
--   olympic_runs_dropped integer: runs the official olympic mean drops at each end (unet3d: 4, others: 1)
--   samples_to_converge_min double: the fewest samples to converge that are plausible (absolute, from the reference convergence points)
--   samples_to_converge_max double: the most samples to converge that are plausible; outside the bounds a run's sample-based metrics are NULL with the reason
--   bounds_source varchar: where samples_to_converge_min and _max come from
-- One row per MLPerf Training benchmark: what it trains, the model FLOPs one sample costs (with
-- how that figure was derived; NULL where no sound figure exists), its units and the plausible range
-- of its convergence point. Inputs: raw_benchmark_seed (pipelines/lib/reference/benchmarks.csv) and
-- dim_benchmark_dataset (its training set by round).
with dated as (
    select *, row_number() over (partition by benchmark order by first_round_order desc) as recency
    from dim_benchmark_dataset
),

datasets as (
    select
        benchmark,
        any_value(dataset) filter (where recency = 1) as dataset,
        any_value(samples_per_epoch) filter (where recency = 1) as dataset_size,
        any_value(source) filter (where recency = 1) as dataset_size_source,
        any_value(samples_per_epoch) filter (where recency = 2) as earlier_dataset_size,
        any_value(last_round) filter (where recency = 2) as earlier_dataset_last_round
    from dated
    group by benchmark
),

seed as (
    select
        trim(benchmark) as benchmark,
        task,
        model,
        try_cast(parameters as double) as parameters,
        convergence_unit,
        try_cast(tokens_or_samples_per_sample as double) as tokens_or_samples_per_sample,
        try_cast(model_flops_per_sample as double) as model_flops_per_sample,
        flops_derivation,
        source,
        throughput_unit,
        block_work,
        try_cast(olympic_runs_dropped as integer) as olympic_runs_dropped,
        try_cast(samples_to_converge_min as double) as samples_to_converge_min,
        try_cast(samples_to_converge_max as double) as samples_to_converge_max,
        nullif(bounds_source, '') as bounds_source
    from raw_benchmark_seed
    where nullif(trim(benchmark), '') is not null
)

select
    s.benchmark,
    s.task,
    s.model,
    s.parameters,
    s.convergence_unit,
    s.tokens_or_samples_per_sample,
    s.model_flops_per_sample,
    case
        when s.convergence_unit = 'tokens' then s.model_flops_per_sample / s.tokens_or_samples_per_sample
        when s.convergence_unit = 'samples' then s.model_flops_per_sample
        when s.convergence_unit = 'epochs' then s.model_flops_per_sample * d.dataset_size
    end as model_flops_per_convergence_unit,
    s.flops_derivation,
    s.source,
    s.throughput_unit,
    s.block_work,
    d.dataset,
    d.dataset_size,
    d.dataset_size_source,
    d.earlier_dataset_size,
    d.earlier_dataset_last_round,
    s.olympic_runs_dropped,
    s.samples_to_converge_min,
    s.samples_to_converge_max,
    s.bounds_source
from seed as s
left join datasets as d using (benchmark)
