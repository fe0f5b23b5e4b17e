-- One row per accelerator model: vendor, memory and peak dense BF16 FLOP/s with its source.
select
    accelerator,
    vendor,
    model,
    try_cast(memory_gb as double) as memory_gb,
    try_cast(peak_dense_bf16_flops as double) as peak_dense_bf16_flops,
    flops_source,
    note
from raw_accelerator_seed
