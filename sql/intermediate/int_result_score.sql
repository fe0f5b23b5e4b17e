-- model: int_result_score
-- kind: table
-- grain: round, submitter, system, benchmark, rules_basis
-- depends on: int_run_scoring, stg_training_scaling, stg_training_runs
-- description: The official score of each result under each rule basis (published, current).
-- The official score under each rule basis: the olympic mean of the runs that count, in minutes,
-- times the benchmark folder's scaling.json factor (as published); NULL, with the reason, where
-- the official summarizer prints no score (a benchmark the rules do not know, or retired, says so).
-- The scaling factor of a result without scaling.json (`rcp_scaling_source`): the factor published with the same
-- runs under another name in the round (identical logs, identical scores), else 1, as the summarizer prints it:
-- it reads scaling.json before its RCP check writes one (6.0 on), and the published archive records what the
-- review wrote. The factor the RCP checker would write for the logs is beside it (stg_training_rcp), not applied:
-- on the shared v6.0 it is 1.0034 and 1.0188 where MLCommons published 1.
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

run_sets as (
    -- the runs of a result, by identity: the same set under two names is the same result
    select round, submitter, system, benchmark, string_agg(run_identity, ',' order by run_identity) as run_set
    from stg_training_runs
    group by all
),

same_runs_factor as (
    -- a result published with scaling.json whose runs another folder of the round publishes without one
    select bare.round, bare.submitter, bare.system, bare.benchmark,
        arg_min(s.scaling_factor, twin.submitter || '/' || twin.system) as scaling_factor,
        min(twin.submitter || '/' || twin.system) as twin
    from run_sets as bare
    join run_sets as twin
        on twin.round = bare.round and twin.benchmark = bare.benchmark and twin.run_set = bare.run_set
        and (twin.submitter, twin.system) <> (bare.submitter, bare.system)
    join stg_training_scaling as s
        on s.round = twin.round and s.submitter = twin.submitter and s.system = twin.system
        and s.benchmark = twin.benchmark and s.scaling_factor is not null
    group by all
),

factors as (
    select
        r.round, r.submitter, r.system, r.benchmark,
        case
            when scaling.scaling_file is not null then scaling.scaling_factor
            when twin.scaling_factor is not null then twin.scaling_factor
            else 1.0
        end as rcp_scaling_factor,
        case
            when scaling.scaling_file is not null then 'scaling.json'
            when twin.scaling_factor is not null then 'same_runs: ' || twin.twin
            else 'none'
        end as rcp_scaling_source
    from run_sets as r
    left join stg_training_scaling as scaling using (round, submitter, system, benchmark)
    left join same_runs_factor as twin using (round, submitter, system, benchmark)
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
    f.rcp_scaling_factor,
    f.rcp_scaling_source,
    case
        when r.runs_dropped > r.max_dropped then null
        when scaling.scaling_file is not null and scaling.scaling_factor is null then null
        else r.olympic_mean_minutes * f.rcp_scaling_factor
    end as score_minutes,
    case
        when r.runs_without_rules = r.runs_total then r.first_drop_reason
        when r.runs_dropped > r.max_dropped
            then 'too many runs dropped (' || r.runs_dropped || ' > ' || r.max_dropped || '): ' || d.causes
        when scaling.scaling_file is not null and scaling.scaling_factor is null then scaling.scaling_problem
        when r.runs_in_mean = 0 then 'no runs left after olympic trimming'
    end as no_score_reason
from results as r
left join stg_training_scaling as scaling using (round, submitter, system, benchmark)
left join drop_causes as d using (round, submitter, system, benchmark, rules_basis)
left join factors as f using (round, submitter, system, benchmark)
