-- One row per (round, submitter, system, benchmark): the official score in minutes; whether the
-- result was carried over from an earlier round or duplicates another folder of the same round.
with runs as (
    select
        round,
        submitter,
        system,
        benchmark,
        count(*) as runs_total,
        count(*) filter (where not scored) as runs_dropped,
        case when benchmark = 'unet3d' then 4 else 1 end as max_dropped,
        avg(time_to_train_minutes) filter (where in_olympic_mean) as olympic_mean_minutes,
        count(*) filter (where in_olympic_mean) as runs_in_mean,
        avg(global_batch_size) filter (where scored) as global_batch_size,
        avg(samples_to_converge) filter (where in_olympic_mean) as samples_to_converge,
        -- Carried over: every scored run was first seen in an earlier round (the latest of those).
        case when bool_and(first_seen_round <> round) filter (where scored)
            then arg_max(first_seen_round, [cast(split_part(substr(first_seen_round, 2), '.', 1) as integer),
                                            cast(split_part(substr(first_seen_round, 2), '.', 2) as integer)])
                filter (where scored)
        end as carried_over_from,
        string_agg(run_identity, ',' order by run_identity) as run_set
    from fct_training_run
    group by all
)

select
    runs.round,
    runs.submitter,
    runs.system,
    runs.benchmark,
    sys.division,
    sys.availability,
    sys.accelerator_model_name,
    sys.accelerator_count,
    runs.runs_total,
    runs.runs_dropped,
    runs.runs_in_mean,
    coalesce(scaling.scaling_factor, case when scaling.scaling_file is null then 1.0 end) as rcp_scaling_factor,
    case
        when runs.runs_dropped > runs.max_dropped then null
        when scaling.scaling_file is not null and scaling.scaling_factor is null then null
        else runs.olympic_mean_minutes * coalesce(scaling.scaling_factor, 1.0)
    end as score_minutes,
    case
        when runs.runs_dropped > runs.max_dropped
            then 'too many runs dropped (' || runs.runs_dropped || ' > ' || runs.max_dropped || ')'
        when scaling.scaling_file is not null and scaling.scaling_factor is null then scaling.scaling_problem
        when runs.runs_in_mean = 0 then 'no runs left after olympic trimming'
    end as no_score_reason,
    runs.global_batch_size,
    runs.samples_to_converge,
    sys.system is not null as has_system_description,
    runs.carried_over_from,
    -- Duplicate: other submitter/system folders of the round published the same runs; the first by
    -- (submitter, system) is the canonical one (NULL here), the others name it as 'submitter/system'.
    case when runs.run_set is not null and row_number() over same_runs > 1
        then first_value(runs.submitter || '/' || runs.system) over same_runs
    end as duplicate_of
from runs
left join stg_mlperf_scaling as scaling using (round, submitter, system, benchmark)
left join dim_system as sys using (round, submitter, system)
window same_runs as (partition by runs.round, runs.benchmark, runs.run_set order by runs.submitter, runs.system)
