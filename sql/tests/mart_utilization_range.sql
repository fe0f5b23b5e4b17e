-- tests: mart_utilization
-- description: MFU in (0, 2], precision and its source stated, the precision's own peak used.
-- MFU is positive and at most 2 (a bound that blocks publishing; the Dagster check `mfu_at_most_one`
-- is the ERROR that names every result above 1, against the peak of the result's own precision).
-- Every result says which precision it was measured in and where that came from, and uses that
-- precision's peak. Also: one row per result; one row per benchmark.
select 'mfu out of (0, 2]' as problem, round, submitter, system, benchmark, mfu::varchar as detail
from mart_utilization
where mfu <= 0 or mfu > 2
union all
select 'precision or its source missing or unknown', round, submitter, system, benchmark,
    coalesce(precision, 'NULL') || ' / ' || coalesce(precision_source, 'NULL')
from mart_utilization
where precision is null or precision not in ('fp4', 'fp8', 'bf16', 'fp16')
    or precision_source is null or precision_source not in ('log', 'system_description', 'default_bf16')
union all
select 'peak is not that of the precision', round, submitter, system, benchmark, precision
from mart_utilization
where peak_flops_used is distinct from case precision
        when 'fp8' then peak_dense_fp8_flops when 'fp4' then null else peak_dense_bf16_flops end
union all
select 'mfu NULL without a reason', round, submitter, system, benchmark, null
from mart_utilization
where (mfu is null) <> (mfu_null_reason is not null)
union all
select 'duplicate result', round, submitter, system, benchmark, count(*)::varchar
from mart_utilization
group by round, submitter, system, benchmark
having count(*) > 1
union all
select 'duplicate benchmark', null, null, null, benchmark, count(*)::varchar
from dim_benchmark
group by benchmark
having count(*) > 1
