-- model: mart_hpc_strong_scaling
-- kind: table
-- grain: round, submitter, benchmark, accelerator, division, system
-- depends on: fct_hpc_result
-- description: MLPerf HPC strong scaling: each family's scored systems against its smallest, time to train one model.
-- columns:
--   suite varchar: always 'hpc'
--   round varchar: the HPC round
--   submitter varchar: the submitting organization's folder
--   benchmark varchar: cosmoflow, deepcam, oc20, openfold, ...
--   accelerator varchar: the dim_accelerator key, else the declared accelerator model name (CPU-only: N/A)
--   division varchar: closed or open
--   system varchar: the systems file's stem
--   base_system varchar: the family's base: its smallest system (ties: the fastest score, then the name)
--   base_accelerator_count bigint: the base's accelerator count (CPU-only systems: nodes)
--   accelerator_count bigint: this system's accelerator count (CPU-only systems: nodes)
--   size_unit varchar: accelerators, or nodes for CPU-only systems
--   size_ratio double: accelerator_count ÷ base_accelerator_count
--   base_score_minutes double: the base's strong score, minutes
--   score_minutes double: this system's strong score, minutes (fct_hpc_result.score_minutes)
--   speedup double: base_score_minutes ÷ score_minutes
--   convergence_scaling_efficiency double: speedup ÷ size_ratio: how much of the added hardware became a shorter time to train
--   is_base boolean: this row is the family's base
--   family_size bigint: scored strong results in the family
-- A family compares like with like: same round, submitter, benchmark, accelerator and division. The
-- size of a CPU-only system (Fugaku's A64FX) is its node count. Only scored strong results take part.
with scored as (
    select
        round, submitter, benchmark, division, system, score_minutes,
        coalesce(accelerator, accelerator_model_name, 'unknown') as accelerator,
        case when coalesce(accelerator_count, 0) > 0 then accelerator_count else number_of_nodes end as size,
        case when coalesce(accelerator_count, 0) > 0 then 'accelerators' else 'nodes' end as size_unit
    from fct_hpc_result
    where scale = 'strong' and score_minutes is not null
),

families as (
    select
        *,
        first_value(system) over family as base_system,
        first_value(size) over family as base_size,
        first_value(score_minutes) over family as base_score,
        count(*) over (partition by round, submitter, benchmark, accelerator, division) as family_size
    from scored
    window family as (partition by round, submitter, benchmark, accelerator, division
                      order by size nulls last, score_minutes, system)
)

select
    'hpc' as suite,
    round,
    submitter,
    benchmark,
    accelerator,
    division,
    system,
    base_system,
    base_size as base_accelerator_count,
    size as accelerator_count,
    size_unit,
    size / base_size as size_ratio,
    base_score as base_score_minutes,
    score_minutes,
    base_score / score_minutes as speedup,
    base_score / score_minutes / (size / base_size) as convergence_scaling_efficiency,
    system = base_system as is_base,
    family_size
from families
where size > 0 and base_size > 0
