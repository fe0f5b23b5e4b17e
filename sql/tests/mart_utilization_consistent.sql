-- tests: mart_utilization
-- severity: structural
-- description: MFU in (0, 1] or NULL with a reason; precision and its source from their vocabularies (NULL only for an unmapped statement); the precision's own peak.
-- Allowed values come from the one place that defines them (pipelines/lib/reference/vocabulary.csv).
select 'mfu out of (0, 1]' as problem, round, submitter, system, benchmark, mfu::varchar as detail
from mart_utilization
where mfu <= 0 or mfu > 1
union all
select 'precision or its source not in the vocabulary', round, submitter, system, benchmark,
    coalesce(precision, 'NULL') || ' / ' || coalesce(precision_source, 'NULL')
from mart_utilization
where (precision is null) <> (precision_source = 'unmapped_statement')
    or precision not in (select value from raw_vocabulary_seed where vocabulary = 'precision')
    or precision_source is null
    or precision_source not in (select value from raw_vocabulary_seed where vocabulary = 'precision_source')
union all
select 'peak is not that of the precision', round, submitter, system, benchmark, precision
from mart_utilization
where peak_flops_used is distinct from case precision
        when 'fp8' then peak_dense_fp8_flops when 'fp4' then peak_dense_fp4_flops
        when 'bf16' then peak_dense_bf16_flops when 'fp16' then peak_dense_bf16_flops end
union all
select 'mfu NULL without a reason, or a reason beside a figure', round, submitter, system, benchmark, mfu_null_reason
from mart_utilization
where (mfu is null) <> (mfu_null_reason is not null)
