-- One row per MLPerf Training benchmark: what it trains and the model FLOPs one sample costs,
-- with how that figure was derived. NULL FLOPs where no sound figure exists.
-- `convergence_unit` is the unit of fct_training_result.samples_to_converge for the benchmark
-- (the RCP checker's unit): tokens for gpt3, sequences/samples for the other language models.
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
    end as model_flops_per_convergence_unit,
    flops_derivation,
    source
from raw_benchmark_seed
where nullif(trim(benchmark), '') is not null
