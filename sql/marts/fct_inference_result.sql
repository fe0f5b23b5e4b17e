-- model: fct_inference_result
-- kind: table
-- grain: round, location
-- depends on: stg_inference_results, dim_inference_system
-- description: MLPerf Inference results as MLCommons' table states them: one per division, submitter, system, model and scenario.
-- columns:
--   suite varchar: always 'inference'
--   round varchar: the Inference round
--   division varchar: closed, open or network
--   submitter varchar: the submitting organization's folder
--   system varchar: the systems file's stem (the results folder name)
--   system_name varchar: the system's name in the systems file
--   model varchar: the model as MLCommons' table names it (llama2-70b-99, resnet, ...): the folder as the round's checker maps it
--   model_mapped_by varchar: what maps the model folder to the model: the checker's model_mapping or guess, or the submitter's model_mapping.json (NULL: the folder is its name)
--   scenario varchar: Offline, Server, Interactive, SingleStream or MultiStream (from the scenario folder)
--   location varchar: the scenario folder inside the archive, exactly as summary_results.json's Location
--   performance_result double: the result's metric as MLCommons' submission checker of the round reads it (the detail log's result_* key, at its precision)
--   performance_units varchar: what performance_result counts (vocabulary inference_units)
--   mlcommons_units varchar: the units MLCommons' table labels the result with, as the round's checker sets them (differs where the table mislabels: Whisper Offline, Llama 3.1 8B Interactive in v5.1)
--   performance_source varchar: the log and the key (or summary line) the metric is read from, and how it is derived when the folder's scenario is not the run's
--   performance_log varchar: the log the metric is read from: mlperf_log_detail.txt, or mlperf_log_summary.txt where no detail log can be read (vocabulary inference_metric_log)
--   performance_null_reason varchar: why performance_result is NULL (one sentence naming what is missing)
--   inferred boolean: the metric is derived from another scenario's run, as the checker does (MultiStream from SingleStream: 99th-percentile estimate × 8; Offline from SingleStream or MultiStream)
--   checker_version varchar: the round whose checker facts were applied (inference_checker_facts.csv)
--   checker_version_assumed boolean: the round has no checker facts of its own: the nearest known round's were applied
--   valid boolean: LoadGen judged the run VALID, the metric could be derived and the checker's rules hold
--   invalid_reason varchar: why the result is not valid (LoadGen's verdict, the checker's rules, a metric that cannot be read)
--   performance_constraints_satisfied boolean: LoadGen's latency constraints were met (Server, Interactive)
--   min_duration_satisfied boolean: the run lasted LoadGen's minimum duration
--   min_queries_satisfied boolean: the run issued LoadGen's minimum number of queries
--   early_stopping_satisfied boolean: LoadGen's early-stopping criterion was met
--   scenario_logged varchar: the scenario the summary itself states (an Interactive folder's says Server)
--   target_qps double: the query rate LoadGen was set to (Server, Interactive)
--   target_latency_ms double: the latency bound of the scenario, ms (Server; 0: none)
--   ttft_limit_ms double: the time-to-first-token limit that applied, ms (LLM Server and Interactive)
--   tpot_limit_ms double: the time-per-output-token limit that applied, ms (LLM Server and Interactive)
--   latency_p50_ms double: median query latency, ms
--   latency_p90_ms double: 90th-percentile query latency, ms
--   latency_p99_ms double: 99th-percentile query latency, ms
--   ttft_p99_ms double: 99th-percentile time to first token, ms (LLMs)
--   tpot_p99_ms double: 99th-percentile time per output token, ms (LLMs)
--   tokens_per_second double: tokens per second as the summary states it (LLMs)
--   samples_per_second double: samples (queries) per second as the summary states it
--   accelerator_model_name varchar: as the systems file names it
--   accelerator varchar: the dim_accelerator key (NULL: CPU-only or unmapped)
--   accelerator_count bigint: accelerators of the system (0: CPU-only)
--   number_of_nodes bigint: nodes of the system
--   performance_per_accelerator double: performance_result ÷ accelerator_count, for throughput units
--   software varchar: the framework, as the systems file states it
--   availability varchar: as the systems file states it
--   system_type varchar: datacenter, edge or both, as the systems file states it
--   power_submission boolean: a power result (a ranging run beside run_1)
--   power_w double: the system's average power during the run, W, as MLCommons' results table publishes it (power results)
--   power_per_accelerator_w double: power_w ÷ accelerator_count
--   joules_per_unit double: power_w ÷ performance_result: joules per token, sample or query (throughput results)
--   power_source varchar: where power_w comes from
--   power_null_reason varchar: why the warehouse has no power figure for the result
--   mlcommons_performance_result double: MLCommons' own figure for this Location, when the archive ships its table (a WARN check compares)
--   summary_file varchar: the performance summary inside the archive
--   detail_file varchar: the performance run's detail log inside the archive (NULL: the archive has none for the result)
select
    'inference' as suite,
    r.round,
    r.division,
    r.submitter,
    r.system,
    coalesce(s.system_name, r.system) as system_name,
    r.model,
    r.model_mapped_by,
    r.scenario,
    r.location,
    r.performance_result,
    r.performance_units,
    r.mlcommons_units,
    r.performance_source,
    r.performance_log,
    r.performance_null_reason,
    r.inferred,
    r.checker_version,
    r.checker_version_assumed,
    coalesce(r.result_valid, false) and r.performance_result is not null and r.invalid_reason is null as valid,
    r.invalid_reason,
    r.performance_constraints_satisfied,
    r.min_duration_satisfied,
    r.min_queries_satisfied,
    r.early_stopping_satisfied,
    r.scenario_logged,
    r.target_qps,
    r.target_latency_ms,
    r.ttft_limit_ms,
    r.tpot_limit_ms,
    r.latency_p50_ms,
    r.latency_p90_ms,
    r.latency_p99_ms,
    r.ttft_p99_ms,
    r.tpot_p99_ms,
    r.tokens_per_second,
    r.samples_per_second,
    s.accelerator_model_name,
    s.accelerator,
    s.accelerator_count,
    s.number_of_nodes,
    case when r.performance_units not like 'Latency%' and s.accelerator_count > 0
        then r.performance_result / s.accelerator_count end as performance_per_accelerator,
    s.framework as software,
    s.availability,
    s.system_type,
    r.power_submission,
    r.power_w,
    r.power_w / nullif(s.accelerator_count, 0) as power_per_accelerator_w,
    case when r.performance_units not like 'Latency%' then r.power_w / r.performance_result end as joules_per_unit,
    case when r.power_w is not null then 'MLCommons'' results table (summary_results.json): audited average power'
    end as power_source,
    case
        when r.power_w is not null then null
        when r.power_result is not null then 'MLCommons'' table states power in ' || r.power_units || ', not W'
        when r.power_submission then 'a power result, but the archive ships no MLCommons table with its power (the '
            || 'power logs themselves are not read)'
        else 'not a power result'
    end as power_null_reason,
    r.mlcommons_performance_result,
    r.summary_file,
    r.detail_file
from (
    select *, case when power_units = 'Watts' then power_result end as power_w from stg_inference_results
) as r
left join dim_inference_system as s
    on s.round = r.round and s.division = r.division and s.submitter = r.submitter and s.system = r.system
