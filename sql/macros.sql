-- macros: round_order, system_accelerator_mapping, in_olympic_mean
-- description: SQL functions every model may call; created in each build before the models run.
-- round_order('v4.1') = 4001: MLPerf rounds compared as version numbers ('v10.0' after 'v9.1').
create or replace macro round_order(r) as
    try_cast(split_part(ltrim(r, 'v'), '.', 1) as integer) * 1000 + try_cast(split_part(ltrim(r, 'v'), '.', 2) as integer);
-- system_accelerator_mapping(...): how a system's declared accelerator maps to dim_accelerator, for the HPC and
-- Inference systems: mapped, cpu_only (no accelerator at all: kept with 0), deliberately_unmapped or unmapped.
create or replace macro system_accelerator_mapping(accelerator, deliberately_unmapped, per_node, total) as
    case
        when accelerator is not null then 'mapped'
        when coalesce(per_node, 0) = 0 and coalesce(total, 0) = 0 then 'cpu_only'
        when deliberately_unmapped then 'deliberately_unmapped'
        else 'unmapped'
    end;
-- in_olympic_mean(...): whether a run counts in its result's olympic mean, the MLCommons scoring rule for Training
-- and HPC time-to-train results: of the runs that pass the rules, the `max_dropped` fastest and slowest are
-- dropped, fewer slow ones as runs fail (a failed run counts as one dropped); more failures than
-- `max_dropped` and the result has no score. `speed_rank` ranks the run among its result's runs of the same
-- verdict, fastest first (ties by file name); `same_verdict_runs` counts them.
create or replace macro in_olympic_mean(scored, runs_dropped, max_dropped, speed_rank, same_verdict_runs) as
    scored
        and runs_dropped <= max_dropped
        and speed_rank > max_dropped
        and speed_rank <= same_verdict_runs - (max_dropped - runs_dropped);
