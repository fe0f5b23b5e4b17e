-- model: fct_training_result
-- kind: table
-- grain: round, submitter, system, benchmark
-- depends on: int_result_score, fct_training_run, dim_system, stg_training_rules, stg_training_rcp
-- description: Official results: the score as published and under today's rules, with the runs behind it.
-- columns:
--   round varchar
--   submitter varchar
--   system varchar
--   benchmark varchar
--   division varchar
--   availability varchar
--   accelerator_model_name varchar
--   accelerator_count bigint
--   runs_total bigint: result files of the result
--   runs_dropped bigint: runs the published rules dropped (target not reached, rule failures, ...)
--   runs_in_mean bigint: runs in the olympic mean the score is (after the fastest and slowest are dropped)
--   rcp_scaling_factor double: the factor the mean was multiplied by: the folder's scaling.json, else as rcp_scaling_source says (1 when none)
--   rcp_scaling_source varchar: where rcp_scaling_factor comes from: scaling.json (as published), 'same_runs: submitter/system' (the factor published with the same runs in the round: identical logs, identical scores), none
--   rcp_check varchar: the RCP checker's verdict as the release's summarizer prints it (Pass, Fail, Interp. Fail, Missing, No RCP, Unknown state; NULL: open division, or a release without RCPs)
--   rcp_check_message varchar: the RCP checker's message (RCP found, RCP Interpolation, Missing RCP, please submit RCP with BS = 16, ...)
--   rcp_global_batch_size double: the global batch size as the summarizer's detailed summary prints it (GBS)
--   rcp_samples_to_converge double: the detailed summary's samples_to_converge: the mean of the runs' convergence points in the RCP's unit (samples, or epochs for epoch-counted benchmarks), one dropped at each end
--   rcp_scaling_factor_computed double: the factor the round's RCP checker would write into scaling.json for these logs (NULL: none: not faster than the reference, or failed); not applied unless published (rcp_scaling_source)
--   score_minutes double
--   no_score_reason varchar: why there is no published score (too many runs dropped, ...)
--   global_batch_size double: mean global batch size over the scored runs (a double: runs can differ)
--   samples_to_converge double: mean samples to converge over the olympic-mean runs, in samples (NULL unless each of them has the figure)
--   has_system_description boolean: the result's systems file was read
--   ruleset_ref varchar
--   rules_provisional boolean: the rules that scored the round are not its own (no release ships them yet): provisional (dim_rules_release)
--   rules_provisional_reason varchar: which release judged the round instead, and why (NULL: the round's own rules)
--   score_minutes_current_rules double: the score under today's pinned mlperf-logging package (NULL: it gives none)
--   runs_dropped_current_rules bigint: runs today's rules drop
--   current_rules_drop_reason varchar: why today's rules reject runs the published rules accepted (NULL when both agree)
--   carried_over_from varchar: the earlier round all its scored runs were first published in (NULL: some run is new)
--   epochs_to_converge double: mean passes over the training set to converge, olympic-mean runs (epoch-counted benchmarks)
--   samples_to_converge_null_reason varchar: why samples_to_converge is NULL (the first olympic-mean run's reason)
--   duplicate_of varchar: submitter/system of another folder of the same round and benchmark with exactly the same runs (NULL: canonical)
--   runs_with_power bigint: runs with power logs (0: not a power result)
--   power_measurement_type varchar: AC or DC, as the result's power logs state it
--   energy_to_train_j double: energy to train, J: the olympic average of the runs' energy, times the scaling factor, as the official scorer computes it
--   energy_to_train_kwh double: the same in kWh (J ÷ 3.6e6)
--   energy_null_reason varchar: why a power result has no energy
-- `score_minutes` is the score as MLCommons published it (the round's own rules, `ruleset_ref`);
-- `score_minutes_current_rules` is what today's pinned mlperf-logging package gives, and
-- `current_rules_drop_reason` why it rejects runs the published rules accepted. Flags (scores
-- unchanged): `carried_over_from` an earlier round, `duplicate_of` another folder of the same round.
with runs as (
    select
        round,
        submitter,
        system,
        benchmark,
        any_value(ruleset_ref) as ruleset_ref,
        avg(global_batch_size) filter (where scored) as global_batch_size,
        -- means over the runs of the olympic mean, only when every one of them has the figure
        case when count(samples_to_converge) filter (where in_olympic_mean) = count(*) filter (where in_olympic_mean)
            then avg(samples_to_converge) filter (where in_olympic_mean) end as samples_to_converge,
        case when count(epochs_to_converge) filter (where in_olympic_mean) = count(*) filter (where in_olympic_mean)
            then avg(epochs_to_converge) filter (where in_olympic_mean) end as epochs_to_converge,
        -- why samples_to_converge is NULL: the first olympic-mean run's reason
        arg_min(samples_to_converge_null_reason, run_file) filter (where in_olympic_mean) as samples_null_reason,
        -- runs the published rules accept and today's reject: the first reason, in file order
        arg_min(current_rules_drop_reason, run_file) filter (where scored and not scored_current_rules)
            as newly_dropped_reason,
        -- Carried over: every scored run was first seen in an earlier round (the latest of those).
        case when bool_and(first_seen_round <> round) filter (where scored)
            then arg_max(first_seen_round, round_order(first_seen_round)) filter (where scored)
        end as carried_over_from,
        string_agg(run_identity, ',' order by run_identity) as run_set,
        count(*) filter (where power_logs > 0) as runs_with_power,
        any_value(power_measurement_type) as power_measurement_type,
        -- energy: the runs of the olympic mean, only when every one of them has its energy
        case when count(energy_j) filter (where in_olympic_mean) = count(*) filter (where in_olympic_mean)
            then avg(energy_j) filter (where in_olympic_mean) end as mean_energy_j,
        arg_min(coalesce(energy_null_reason, 'no power logs for ' || run_file_name), run_file)
            filter (where in_olympic_mean and energy_j is null) as energy_run_reason
    from fct_training_run
    group by all
)

select
    published.round,
    published.submitter,
    published.system,
    published.benchmark,
    sys.division,
    sys.availability,
    sys.accelerator_model_name,
    sys.accelerator_count,
    published.runs_total,
    published.runs_dropped,
    published.runs_in_mean,
    published.rcp_scaling_factor,
    published.rcp_scaling_source,
    rcp.rcp_check,
    rcp.rcp_message as rcp_check_message,
    rcp.rcp_gbs as rcp_global_batch_size,
    rcp.rcp_samples_to_converge,
    rcp.rcp_scaling_written as rcp_scaling_factor_computed,
    published.score_minutes,
    published.no_score_reason,
    runs.global_batch_size,
    runs.samples_to_converge,
    sys.system is not null as has_system_description,
    runs.ruleset_ref,
    coalesce(rules.provisional, false) as rules_provisional,
    case when rules.provisional then rules.why end as rules_provisional_reason,
    current.score_minutes as score_minutes_current_rules,
    current.runs_dropped as runs_dropped_current_rules,
    case
        when current.score_minutes is null or published.score_minutes is null
            or current.score_minutes != published.score_minutes
            then coalesce(runs.newly_dropped_reason, current.no_score_reason)
    end as current_rules_drop_reason,
    runs.carried_over_from,
    runs.epochs_to_converge,
    case when runs.samples_to_converge is null then runs.samples_null_reason end as samples_to_converge_null_reason,
    -- Duplicate: other submitter/system folders of the round published the same runs; the first by
    -- (submitter, system) is the canonical one (NULL here), the others name it as 'submitter/system'.
    case when runs.run_set is not null and row_number() over same_runs > 1
        then first_value(runs.submitter || '/' || runs.system) over same_runs
    end as duplicate_of,
    runs.runs_with_power,
    runs.power_measurement_type,
    runs.mean_energy_j * published.rcp_scaling_factor as energy_to_train_j,
    runs.mean_energy_j * published.rcp_scaling_factor / 3.6e6 as energy_to_train_kwh,
    case
        when runs.mean_energy_j is not null and published.rcp_scaling_factor is not null then null
        when runs.runs_with_power = 0 and (lower(published.submitter) like '%power%' or lower(published.system) like '%power%')
            then 'named a power submission, but the archive holds no power logs for it'
        when runs.runs_with_power = 0 then null  -- not a power result
        when published.score_minutes is null then 'no score: ' || coalesce(published.no_score_reason, 'unscored')
        else coalesce(runs.energy_run_reason, 'no scaling factor')
    end as energy_null_reason
from int_result_score as published
join int_result_score as current
    on current.round = published.round and current.submitter = published.submitter
    and current.system = published.system and current.benchmark = published.benchmark
    and current.rules_basis = 'current'
join runs
    on runs.round = published.round and runs.submitter = published.submitter
    and runs.system = published.system and runs.benchmark = published.benchmark
left join dim_system as sys
    on sys.round = published.round and sys.submitter = published.submitter and sys.system = published.system
left join stg_training_rules as rules on rules.round = published.round
left join stg_training_rcp as rcp
    on rcp.round = published.round and rcp.submitter = published.submitter and rcp.system = published.system
    and rcp.benchmark = published.benchmark
where published.rules_basis = 'published'
window same_runs as (partition by runs.round, runs.benchmark, runs.run_set order by runs.submitter, runs.system)
