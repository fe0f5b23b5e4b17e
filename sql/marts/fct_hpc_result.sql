-- model: fct_hpc_result
-- kind: table
-- grain: round, submitter, system, scale, benchmark
-- depends on: int_hpc_run_scoring, stg_hpc_runs, dim_hpc_system, raw_hpc_scaling, raw_hpc_benchmark_seed, stg_hpc_rules
-- description: MLPerf HPC results: strong-scaling scores (minutes) and weak-scaling throughput (models per minute).
-- columns:
--   suite varchar: always 'hpc' (Training's results are fct_training_result)
--   round varchar: the HPC round (not a Training round)
--   submitter varchar: the submitting organization's folder
--   system varchar: the systems file's stem (the results folder name)
--   scale varchar: strong (time to train one model on the system) or weak (many models trained at once)
--   benchmark varchar: cosmoflow, deepcam, oc20, openfold, ...
--   division varchar: closed or open, from the systems file
--   availability varchar: as the systems file states it
--   system_name varchar: the system's name in the systems file
--   accelerator_model_name varchar: as the systems file names it (N/A on CPU-only systems)
--   accelerator varchar: the accelerator key of dim_accelerator (NULL: CPU-only or unmapped; see dim_hpc_system)
--   accelerator_count bigint: accelerators of the whole system (0: CPU-only, e.g. Fugaku's A64FX)
--   number_of_nodes bigint: nodes of the whole system
--   ruleset_ref varchar: the mlcommons/logging ref of the rules the round was scored with
--   rules_provisional boolean: the rules that judged the round are not its own (dim_rules_release)
--   rules_provisional_reason varchar: which release judged the round instead, and why (NULL: the round's own rules)
--   runs_total bigint: result files of the result
--   runs_dropped bigint: runs the round's own rules do not count
--   first_drop_reason varchar: the first dropped run's reason, in file order
--   runs_in_mean bigint: strong: runs inside the olympic mean
--   rcp_scaling_factor double: strong: the benchmark folder's scaling.json factor (1 when none)
--   score_minutes double: strong: the olympic mean time to train × scaling factor, minutes, as the round's own rules give it
--   score_minutes_current_rules double: strong: the same under today's pinned mlperf-logging package
--   no_score_reason varchar: strong: why there is no score (a round older than every HPC rules folder, v0.7, gets none)
--   number_of_models bigint: weak: models trained (runs that count)
--   models_required bigint: weak: the fewest models the rules accept (hpc_benchmarks.csv)
--   instance_scale bigint: weak: accelerators each model trained on (nodes × accelerators per node, from the logs)
--   instance_scale_varies boolean: weak: the logs state different instance scales (the official scorer stops there)
--   time_to_train_all_minutes double: weak: from the first model's run_start to the last model's run_stop, minutes
--   models_per_minute double: weak: number_of_models ÷ time_to_train_all_minutes, the HPC weak-scaling throughput
--   number_of_models_current_rules bigint: weak: models that count under today's rules
--   models_per_minute_current_rules double: weak: the throughput under today's rules
--   current_rules_drop_reason varchar: why today's rules give no figure or another one: the first run they drop that the round's own rules count, else why they give none (NULL: the same figure, or one where the round's own rules give none)
--   throughput_null_reason varchar: weak: why there is no throughput
--   energy_to_train_j double: energy to train, J (NULL: HPC power logs are not read yet)
--   energy_to_train_kwh double: the same in kWh
--   energy_null_reason varchar: why there is no energy
with results as (
    select
        round,
        submitter,
        system,
        scale,
        benchmark,
        rules_basis,
        count(*) as runs_total,
        count(*) filter (where not scored) as runs_dropped,
        any_value(max_dropped) as max_dropped,
        count(*) filter (where in_olympic_mean) as runs_in_mean,
        avg(time_to_train_minutes) filter (where in_olympic_mean) as olympic_mean_minutes,
        arg_min(drop_reason, run_file) filter (where not scored) as first_drop_reason,
        count(*) filter (where scored) as models,
        (max(run_stop_ms) filter (where scored) - min(run_start_ms) filter (where scored)) / 60000.0 as all_minutes,
        min(instance_scale) filter (where scored) as instance_scale_min,
        max(instance_scale) filter (where scored) as instance_scale_max
    from int_hpc_run_scoring
    group by all
),

scaling as (
    select round, submitter, system, scale, benchmark, scaling_factor, scaling_file, scaling_problem
    from raw_hpc_scaling
),

scored as (
    select
        r.*,
        coalesce(s.scaling_factor, case when s.scaling_file is null then 1.0 end) as rcp_scaling_factor,
        try_cast(seed.result_files_required as bigint) as models_required,
        case
            when r.scale <> 'strong' then null
            when r.runs_dropped > r.max_dropped then null
            when s.scaling_file is not null and s.scaling_factor is null then null
            else r.olympic_mean_minutes * coalesce(s.scaling_factor, 1.0)
        end as score,
        case
            when r.scale <> 'strong' then null
            when r.runs_dropped > r.max_dropped
                then 'too many runs dropped (' || r.runs_dropped || ' > ' || r.max_dropped || '): ' || r.first_drop_reason
            when s.scaling_file is not null and s.scaling_factor is null then s.scaling_problem
            when r.runs_in_mean = 0 then 'no runs left after olympic trimming'
        end as no_score_reason,
        case
            when r.scale <> 'weak' then null
            when seed.benchmark is null
                then 'no count of models required is known for benchmark ' || r.benchmark || ' (hpc_benchmarks.csv)'
            when r.models < try_cast(seed.result_files_required as bigint)
                then 'too few models count (' || r.models || ' < ' || seed.result_files_required || ')'
                    || coalesce(': ' || r.first_drop_reason, '')
            when r.instance_scale_min is distinct from r.instance_scale_max
                then 'the logs state different instance scales (' || r.instance_scale_min || ' to '
                    || r.instance_scale_max || ')'
            when r.instance_scale_min is null then 'the logs state no number_of_nodes or accelerators_per_node'
            when not r.all_minutes > 0 then 'no time between the first run_start and the last run_stop'
        end as throughput_null_reason
    from results as r
    left join scaling as s using (round, submitter, system, scale, benchmark)
    left join raw_hpc_benchmark_seed as seed using (benchmark)
)

select
    'hpc' as suite,
    p.round,
    p.submitter,
    p.system,
    p.scale,
    p.benchmark,
    sys.division,
    sys.availability,
    sys.system_name,
    sys.accelerator_model_name,
    sys.accelerator,
    sys.accelerator_count,
    sys.number_of_nodes,
    ref.ruleset_ref,
    coalesce(rules.provisional, false) as rules_provisional,
    case when rules.provisional then rules.why end as rules_provisional_reason,
    p.runs_total,
    p.runs_dropped,
    p.first_drop_reason,
    case when p.scale = 'strong' then p.runs_in_mean end as runs_in_mean,
    case when p.scale = 'strong' then p.rcp_scaling_factor end as rcp_scaling_factor,
    case when not ref.rules_postdate_round then p.score end as score_minutes,
    case when not ref.rules_postdate_round then c.score end as score_minutes_current_rules,
    case
        when ref.rules_postdate_round and p.scale = 'strong' then ref.no_rules_reason
        else p.no_score_reason
    end as no_score_reason,
    case when p.scale = 'weak' then p.models end as number_of_models,
    case when p.scale = 'weak' then p.models_required end as models_required,
    case when p.scale = 'weak' then p.instance_scale_min end as instance_scale,
    case when p.scale = 'weak' then p.instance_scale_min is distinct from p.instance_scale_max end
        as instance_scale_varies,
    case when p.scale = 'weak' then p.all_minutes end as time_to_train_all_minutes,
    case when p.scale = 'weak' and p.throughput_null_reason is null and not ref.rules_postdate_round
        then p.models / p.all_minutes end as models_per_minute,
    case when p.scale = 'weak' then c.models end as number_of_models_current_rules,
    case when p.scale = 'weak' and c.throughput_null_reason is null and not ref.rules_postdate_round
        then c.models / c.all_minutes end as models_per_minute_current_rules,
    case
        when ref.rules_postdate_round then ref.no_rules_reason
        when p.scale = 'strong' and c.score = p.score then null
        when p.scale = 'weak' and c.throughput_null_reason is null and p.throughput_null_reason is null
            and c.models = p.models and c.all_minutes = p.all_minutes then null
        else coalesce(ref.newly_dropped_reason,
                      case when p.scale = 'strong' then c.no_score_reason else c.throughput_null_reason end)
    end as current_rules_drop_reason,
    case
        when ref.rules_postdate_round and p.scale = 'weak' then ref.no_rules_reason
        else p.throughput_null_reason
    end as throughput_null_reason,
    null::double as energy_to_train_j,
    null::double as energy_to_train_kwh,
    'HPC power logs are not read yet (none in the HPC rounds checked; any are quarantined with that reason)'
        as energy_null_reason
from scored as p
join scored as c
    on c.round = p.round and c.submitter = p.submitter and c.system = p.system and c.scale = p.scale
    and c.benchmark = p.benchmark and c.rules_basis = 'current'
left join dim_hpc_system as sys on sys.round = p.round and sys.submitter = p.submitter and sys.system = p.system
left join stg_hpc_rules as rules on rules.round = p.round
left join (
    -- A round older than every HPC rules folder (v0.7) is judged by the nearest rules there are
    -- (fct_hpc_run says which runs they accept), but gets no score: those rules postdate it.
    select
        round, submitter, system, scale, benchmark,
        any_value(ruleset_ref) as ruleset_ref,
        coalesce(round_order(round) < round_order('v' || regexp_extract(any_value(ruleset), '(\d+\.\d+)', 1)), false)
            as rules_postdate_round,
        'no rules release holds the rules of HPC ' || round || ': the nearest (' || any_value(ruleset)
            || ' of ' || any_value(ruleset_ref) || ') postdate it, so no score is given (fct_hpc_run shows '
            || 'which runs they accept)' as no_rules_reason,
        -- runs the round's own rules count and today's do not: the first reason, in file order
        arg_min(current_rules_drop_reason, run_file) filter (where drop_reason is null
                                                              and current_rules_drop_reason is not null)
            as newly_dropped_reason
    from stg_hpc_runs
    group by round, submitter, system, scale, benchmark
) as ref on ref.round = p.round and ref.submitter = p.submitter and ref.system = p.system
    and ref.scale = p.scale and ref.benchmark = p.benchmark
where p.rules_basis = 'published'
