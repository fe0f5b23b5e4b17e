-- model: int_result_score
-- kind: table
-- grain: round, submitter, system, benchmark, rules_basis
-- depends on: int_run_scoring, stg_mlperf_scaling
-- description: The official score of each result under each rule basis (published, current).
-- The official score under each rule basis: the olympic mean of the runs that count, in minutes,
-- times the benchmark folder's scaling.json factor (as published); NULL, with the reason, where
-- the official summarizer prints no score (a benchmark the rules do not know, or retired, says so).
-- Too many runs dropped names every cause: how many runs each reason dropped, and which (up to three
-- file names a reason), most common first.
with drops as (
    select
        round, submitter, system, benchmark, rules_basis, drop_reason,
        count(*) as runs,
        string_agg(regexp_extract(run_file, '[^/]+$'), ', ' order by run_file)
            filter (where file_rank <= 3) as first_files
    from (
        select *, row_number() over (partition by round, submitter, system, benchmark, rules_basis, drop_reason
                                     order by run_file) as file_rank
        from int_run_scoring
        where not scored
    )
    group by all
),

drop_causes as (
    select
        round, submitter, system, benchmark, rules_basis,
        string_agg(
            runs || ' by ' || drop_reason || ' (' || first_files || case when runs > 3 then ', …' else '' end || ')',
            '; ' order by runs desc, drop_reason) as causes
    from drops
    group by all
),

results as (
    select
        round,
        submitter,
        system,
        benchmark,
        rules_basis,
        count(*) as runs_total,
        count(*) filter (where not scored) as runs_dropped,
        any_value(max_dropped) as max_dropped,
        count(*) filter (where in_olympic_mean) as runs_in_mean,
        avg(time_to_train_minutes) filter (where in_olympic_mean) as olympic_mean_minutes,
        -- the first reason, in file order, a run does not count: what a reader checks first
        arg_min(drop_reason, run_file) filter (where not scored) as first_drop_reason,
        -- runs whose rules have no rule file for their benchmark (round_parser.UNKNOWN_BENCHMARK)
        count(*) filter (where drop_reason like 'rules: no rules for benchmark %') as runs_without_rules
    from int_run_scoring
    group by all
)

select
    r.round,
    r.submitter,
    r.system,
    r.benchmark,
    r.rules_basis,
    r.runs_total,
    r.runs_dropped,
    r.runs_in_mean,
    r.first_drop_reason,
    coalesce(scaling.scaling_factor, case when scaling.scaling_file is null then 1.0 end) as rcp_scaling_factor,
    case
        when r.runs_dropped > r.max_dropped then null
        when scaling.scaling_file is not null and scaling.scaling_factor is null then null
        else r.olympic_mean_minutes * coalesce(scaling.scaling_factor, 1.0)
    end as score_minutes,
    case
        when r.runs_without_rules = r.runs_total then r.first_drop_reason
        when r.runs_dropped > r.max_dropped
            then 'too many runs dropped (' || r.runs_dropped || ' > ' || r.max_dropped || '): ' || d.causes
        when scaling.scaling_file is not null and scaling.scaling_factor is null then scaling.scaling_problem
        when r.runs_in_mean = 0 then 'no runs left after olympic trimming'
    end as no_score_reason
from results as r
left join stg_mlperf_scaling as scaling using (round, submitter, system, benchmark)
left join drop_causes as d using (round, submitter, system, benchmark, rules_basis)
