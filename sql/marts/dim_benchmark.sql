-- model: dim_benchmark
-- kind: table
-- grain: benchmark
-- depends on: raw_benchmark_seed, dim_benchmark_dataset
-- description: One row per MLPerf Training benchmark: task, model FLOPs per sample, units, bounds.
-- One row per MLPerf Training benchmark: what it trains, the model FLOPs one sample costs (with
-- how that figure was derived; NULL where no sound figure exists), its units and the plausible range
-- of its convergence point. Inputs: raw_benchmark_seed (pipelines/lib/reference/benchmarks.csv) and
-- dim_benchmark_dataset (its training set by round).
-- Columns:
--   convergence_unit     the unit its logs count the convergence point in: samples, tokens (gpt3) or
--                        epochs (fct_training_run converts every unit to samples)
--   tokens_or_samples_per_sample  tokens per sequence for the LLMs (a gpt3 sample is 2,048 tokens)
--   model_flops_per_sample        model FLOPs to train on one sample (NULL: no sound figure)
--   model_flops_per_convergence_unit  the same per unit of convergence_unit (epochs: of the current dataset)
--   throughput_unit      the unit of every throughput of the benchmark: its samples per second
--   block_work           how a training block's work is read from the logs
--   dataset, dataset_size, dataset_size_source   the current training set (dim_benchmark_dataset)
--   earlier_dataset_size, earlier_dataset_last_round  the one before it, and the last round that used it
--   olympic_runs_dropped the runs the official olympic mean drops at each end
--   samples_to_converge_min, samples_to_converge_max  plausible samples to converge (absolute, from
--                        the reference convergence points): outside them a run's sample-based metrics
--                        are NULL with the reason; bounds_source says where they come from
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
