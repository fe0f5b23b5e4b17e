-- MFU is a fraction of peak: above 0 and at most 1; one row per result; one row per benchmark.
select 'mfu out of (0, 1]' as problem, round, submitter, system, benchmark, mfu::varchar as detail
from mart_utilization
where mfu <= 0 or mfu > 1
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
