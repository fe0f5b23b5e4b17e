-- MFU is positive and below 2: it is measured against peak dense BF16 as the definition says, and
-- submissions training in FP8/INT8 (NVIDIA since v3.1, Google's v5p AQT) can exceed that peak, but
-- not twice it (FP8 dense peak = 2 × BF16). The Dagster check `metric_marts_sensible` warns above 1.
-- Also: one row per result; one row per benchmark.
select 'mfu out of (0, 2]' as problem, round, submitter, system, benchmark, mfu::varchar as detail
from mart_utilization
where mfu <= 0 or mfu > 2
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
