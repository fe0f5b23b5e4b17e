-- model: dim_accelerator
-- kind: table
-- grain: accelerator
-- depends on: raw_accelerator_seed, raw_mlperf_accelerator_map
-- description: One row per accelerator: vendor, memory and dense peak FLOP/s, each with its source.
-- columns:
--   accelerator varchar: the accelerator's key: vendor-model-form-memory, e.g. nvidia-h100-sxm-80gb
--   vendor varchar: nvidia, amd, intel, google, aws, huawei, graphcore, ...
--   model varchar: the accelerator's name for people, e.g. H100 SXM 80GB
--   memory_gb double: memory per accelerator, GB
--   peak_dense_bf16_flops double: peak dense (no structured sparsity) BF16 tensor FLOP/s per accelerator (NULL: none in the hardware, or no figure verified)
--   flops_source varchar: where peak_dense_bf16_flops comes from (vendor data sheet and date)
--   note varchar: how the peaks were read off their sources, or why one is NULL
--   peak_dense_fp8_flops double: peak dense FP8 tensor FLOP/s per accelerator (NULL: no FP8 in the hardware, or no figure verified)
--   fp8_flops_source varchar: where peak_dense_fp8_flops comes from
--   peak_dense_fp4_flops double: peak dense FP4 tensor FLOP/s per accelerator (NULL: no FP4 in the hardware, or no figure verified)
--   fp4_flops_source varchar: where peak_dense_fp4_flops comes from
--   model_number varchar: the vendor's model number (H100, MI300X, TPU v5p, ...)
--   form_factor varchar: sxm, pcie, nvl, oam, ... (NULL: one form only)
--   accelerator_source varchar: reference (a row of accelerators.csv) or derived_by_rule (a key the naming rule derived for a model with no reference row; its peaks are NULL)
-- One row per accelerator: the reference rows of accelerators.csv (vendor, memory, peak dense BF16
-- FP8 and FP4 FLOP/s per accelerator, each with its source) plus one row per key the naming rule
-- derived for a model we hold no reference row for (e.g. a new `amd-mi4xx`): those have NULL
-- peaks, and the `accelerators_without_peak` check names them.
-- The seed raw_accelerator_seed is pipelines/lib/reference/accelerators.csv.
-- Peaks are dense (no structured sparsity). NULL FP8 where the chip has no FP8 (the note says so).
with reference as (
    select
        accelerator,
        vendor,
        model,
        try_cast(memory_gb as double) as memory_gb,
        try_cast(peak_dense_bf16_flops as double) as peak_dense_bf16_flops,
        flops_source,
        note,
        try_cast(peak_dense_fp8_flops as double) as peak_dense_fp8_flops,
        fp8_flops_source,
        try_cast(peak_dense_fp4_flops as double) as peak_dense_fp4_flops,
        nullif(fp4_flops_source, '') as fp4_flops_source,
        model_number,
        nullif(form_factor, '') as form_factor,
        'reference' as accelerator_source
    from raw_accelerator_seed
),

derived as (
    select
        accelerator,
        split_part(accelerator, '-', 1) as vendor,
        min(accelerator_model_name) as model,
        null::double as memory_gb,
        null::double as peak_dense_bf16_flops,
        null::varchar as flops_source,
        'derived by the naming rule from ' || string_agg(distinct accelerator_model_name, ' | ' order by accelerator_model_name)
            || ': no reference row in accelerators.csv, so no peak yet' as note,
        null::double as peak_dense_fp8_flops,
        null::varchar as fp8_flops_source,
        null::double as peak_dense_fp4_flops,
        null::varchar as fp4_flops_source,
        null::varchar as model_number,
        null::varchar as form_factor,
        'derived_by_rule' as accelerator_source
    from raw_mlperf_accelerator_map
    where accelerator is not null and accelerator not in (select accelerator from reference)
    group by accelerator
)

select * from reference
union all by name
select * from derived
