"""Pandera models of the tables parsed from MLPerf Training result archives."""

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from pipelines.lib.reference.events import EVENT_KEYS
from pipelines.lib.reference.vocabulary import values

ROUND = r"^v\d+\.\d+$"

# Bounds that no real log comes near (checked against every shared round) but that catch NaN, ±inf,
# negative and absurd values before they reach SQL. In Polars NaN compares above every number,
# so an upper bound also refuses NaN.
MAX_EPOCH_MS = 1e13  # the year 2286; real logs: 1.5e12-1.8e12
MAX_MINUTES = 1e6  # about two years of training; real: under 1,000
MAX_PROGRESS = 1e11  # real convergence points: under 1.5e10 (GPT-3 counts tokens)
MAX_BLOCK_SAMPLES = 1e10  # real samples_count / epoch_count in one block: under 6e7
MAX_THROUGHPUT = 1e10  # real steady-state throughput: under 7e6 units per second
MAX_POWER_W = 1e7  # one meter or one interconnect estimate: real node readings under 20 kW, switches under 100 kW
MAX_CONVERSION_EFF = 2.0  # real AC/DC conversion efficiencies: 0.9-1.0
MAX_BATCH = 1e9


class TrainingEvent(pa.DataFrameModel):
    """One timeline line of a result log (run, init, block, epoch and eval events)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str = pa.Field(nullable=True)
    system: str = pa.Field(nullable=True)
    benchmark: str = pa.Field(nullable=True)
    run_file: str
    lineno: int = pa.Field(ge=0)
    time_ms: float = pa.Field(ge=0, le=MAX_EPOCH_MS)
    key: str = pa.Field(isin=sorted(EVENT_KEYS))
    value: float = pa.Field(nullable=True, ge=-1e15, le=1e15)
    epoch_num: float = pa.Field(nullable=True)
    first_epoch_num: float = pa.Field(nullable=True)
    epoch_count: float = pa.Field(nullable=True, ge=0, le=MAX_BLOCK_SAMPLES)
    samples_count: float = pa.Field(nullable=True, ge=0, le=MAX_BLOCK_SAMPLES)
    status: str = pa.Field(nullable=True)


class TrainingRun(pa.DataFrameModel):
    """One result log (`results/<system>/<benchmark>/result_*.txt`)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str = pa.Field(str_length={"min_value": 1})
    system: str = pa.Field(str_length={"min_value": 1})
    benchmark: str = pa.Field(str_length={"min_value": 1})
    run_file: str = pa.Field(unique=True)
    ruleset: str = pa.Field(nullable=True)
    ruleset_ref: str = pa.Field(nullable=True)
    passed_compliance: bool
    drop_reason: str = pa.Field(nullable=True)
    current_rules_drop_reason: str = pa.Field(nullable=True)
    status: str = pa.Field(nullable=True)
    run_start_ms: float = pa.Field(nullable=True, ge=0, le=MAX_EPOCH_MS)
    run_stop_ms: float = pa.Field(nullable=True, ge=0, le=MAX_EPOCH_MS)
    time_to_train_minutes: float = pa.Field(nullable=True, ge=0, le=MAX_MINUTES)
    global_batch_size: float = pa.Field(nullable=True, ge=0, le=MAX_BATCH)
    convergence_progress: float = pa.Field(nullable=True, ge=0, le=MAX_PROGRESS)
    convergence_counted_in: str = pa.Field(nullable=True, isin=list(values("progress_unit")))
    convergence_source: str = pa.Field(nullable=True)
    convergence_null_reason: str = pa.Field(nullable=True)
    seed: float = pa.Field(nullable=True, ge=-1e20, le=1e20)
    benchmark_logged: str = pa.Field(nullable=True)
    steady_state_throughput: float = pa.Field(nullable=True, ge=0, le=MAX_THROUGHPUT)
    throughput_unit: str = pa.Field(nullable=True)
    log_lines: int = pa.Field(nullable=True)
    mllog_lines: int = pa.Field(nullable=True)
    parse_errors: int = pa.Field(ge=0)
    first_parse_error: str = pa.Field(nullable=True)
    log_sha256: str = pa.Field(nullable=True, str_matches=r"^[0-9a-f]{64}$")
    precision_logged: str = pa.Field(nullable=True, isin=list(values("precision")))
    precision_evidence: str = pa.Field(nullable=True)
    # the log's lowest_numerical_precision_* lines as logged, and the deciding one when no spelling maps it
    precision_statements: str = pa.Field(nullable=True)
    precision_statement_unmapped: str = pa.Field(nullable=True)
    throughput_counting: str = pa.Field(nullable=True, isin=list(values("throughput_counting")))
    progress_counted_in: str = pa.Field(nullable=True, isin=list(values("progress_unit")))
    throughput_null_reason: str = pa.Field(nullable=True)
    progress_offset: float = pa.Field(nullable=True, ge=0, le=MAX_PROGRESS)
    train_samples_logged: float = pa.Field(nullable=True, gt=0, le=MAX_PROGRESS)
    # Values the checks above refused, nulled with the reason (the run is kept: see NULLED_ON_FAILURE).
    values_nulled: str = pa.Field(nullable=True)

    @pa.dataframe_check
    def scored_runs_have_a_positive_time(cls, data: PolarsData) -> pl.LazyFrame:
        """A run that counts (under either rules) must have stopped after it started."""
        return data.lazyframe.select(
            (pl.col("drop_reason").is_not_null() & pl.col("current_rules_drop_reason").is_not_null())
            | (pl.col("time_to_train_minutes") > 0)
        )


class SystemDescription(pa.DataFrameModel):
    """One system description (`systems/<system>.json`)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str = pa.Field(str_length={"min_value": 1})
    system: str = pa.Field(str_length={"min_value": 1})
    system_name: str
    submitter_declared: str = pa.Field(nullable=True)
    division: str = pa.Field(nullable=True, isin=["closed", "open"])
    availability: str = pa.Field(nullable=True)
    availability_category: str = pa.Field(nullable=True)
    accelerator_model_name: str = pa.Field(nullable=True)
    accelerators_per_node: int = pa.Field(nullable=True, ge=0, le=100_000)
    number_of_nodes: int = pa.Field(nullable=True, ge=0, le=100_000)
    accelerator_count: int = pa.Field(nullable=True, ge=0, le=10_000_000)
    host_processor_model_name: str = pa.Field(nullable=True)
    host_processors_per_node: int = pa.Field(nullable=True)
    framework: str = pa.Field(nullable=True)
    official_fields_missing: str = pa.Field(nullable=True)
    repaired_keys: str = pa.Field(nullable=True)
    source_file: str = pa.Field(nullable=True)
    precision_stated: str = pa.Field(nullable=True, isin=list(values("precision")))
    precision_evidence: str = pa.Field(nullable=True)
    values_nulled: str = pa.Field(nullable=True)  # as TrainingRun.values_nulled

    class Config:
        unique = ["round", "submitter", "system"]


class ScalingFactor(pa.DataFrameModel):
    """`scaling.json` of one benchmark folder (the RCP scaling factor)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str
    system: str
    benchmark: str
    scaling_factor: float = pa.Field(nullable=True, ge=1, le=100)  # round_parser.MIN/MAX_SCALING_FACTOR
    scaling_file: str = pa.Field(nullable=True)
    scaling_problem: str = pa.Field(nullable=True)


class TrainingRcp(pa.DataFrameModel):
    """The RCP checker's verdict on one closed-division result, as the round's own release gives it
    (pipelines/lib/mlperf/rcp.py): what the summarizer prints in its detailed summary, and the factor the checker
    would write into scaling.json."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str
    system: str
    benchmark: str
    rcp_check: str = pa.Field(nullable=True, isin=["Pass", "Fail", "Interp. Fail", "Missing", "No RCP",
                                                   "Unknown state"])
    rcp_passed: bool = pa.Field(nullable=True)
    rcp_message: str
    rcp_norm_factor: float = pa.Field(nullable=True, ge=1, le=100)
    rcp_scaling_written: float = pa.Field(nullable=True, gt=1, le=100)
    rcp_gbs: float = pa.Field(nullable=True, ge=0, le=MAX_BATCH)
    rcp_samples_to_converge: float = pa.Field(nullable=True, ge=0, le=MAX_PROGRESS)
    rcp_rules: str


class RoundRulesUsed(pa.DataFrameModel):
    """The rules release that judged one round's runs: which ref, how it was found, whether it holds the round's own
    rules (provisional when not), and how its content is trusted. One row a round; no ref when no release judges it."""

    round: str = pa.Field(str_matches=ROUND)
    ref: str = pa.Field(nullable=True)
    ref_source: str = pa.Field(nullable=True, isin=values("rules_ref_source"))
    rule_folder: str = pa.Field(nullable=True)
    provisional: bool
    why: str = pa.Field(nullable=True)
    trust: str = pa.Field(nullable=True)


class TrainingPowerLog(pa.DataFrameModel):
    """One power log of a power submission (node meter readings or the interconnect's estimate), summarized
    as the round's release reads it (pipelines/lib/mlperf/power.py)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str
    system: str
    benchmark: str
    result_name: str = pa.Field(str_matches=r"^result_")
    power_file: str
    kind: str = pa.Field(isin=["node", "sw"])
    power_semantics: str
    log_lines: int = pa.Field(ge=0)
    readings: int = pa.Field(ge=0)
    null_readings: int = pa.Field(ge=0)
    hosts: int = pa.Field(ge=0)
    measurement_type: str = pa.Field(nullable=True)
    conversion_eff: float = pa.Field(nullable=True, gt=0, le=MAX_CONVERSION_EFF)
    conversion_eff_logged: bool
    interconnect_power_est_w: float = pa.Field(nullable=True, ge=0, le=MAX_POWER_W)
    window_start_ms: float = pa.Field(nullable=True, ge=0, le=MAX_EPOCH_MS)
    window_stop_ms: float = pa.Field(nullable=True, ge=0, le=MAX_EPOCH_MS)
    stop_logged: bool
    agg_power_w_ms: float = pa.Field(nullable=True, ge=0, le=MAX_POWER_W * MAX_MINUTES * 60_000)
    first_reading_ms: float = pa.Field(nullable=True, ge=0, le=MAX_EPOCH_MS)
    last_reading_ms: float = pa.Field(nullable=True, ge=0, le=MAX_EPOCH_MS)
    problems: str = pa.Field(nullable=True)
    values_nulled: str = pa.Field(nullable=True)  # as TrainingRun.values_nulled


class HpcRun(pa.DataFrameModel):
    """One MLPerf HPC result log (`results/<system>/{strong,weak}/<benchmark>/result_*.txt`)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str = pa.Field(str_length={"min_value": 1})
    system: str = pa.Field(str_length={"min_value": 1})
    scale: str = pa.Field(isin=["strong", "weak"])
    scale_implied: bool
    benchmark: str = pa.Field(str_length={"min_value": 1})
    run_file: str = pa.Field(unique=True)
    ruleset: str = pa.Field(nullable=True)
    ruleset_ref: str = pa.Field(nullable=True)
    passed_compliance: bool
    drop_reason: str = pa.Field(nullable=True)
    current_rules_drop_reason: str = pa.Field(nullable=True)
    status: str = pa.Field(nullable=True)
    run_start_ms: float = pa.Field(nullable=True, ge=0, le=MAX_EPOCH_MS)
    run_stop_ms: float = pa.Field(nullable=True, ge=0, le=MAX_EPOCH_MS)
    time_to_train_minutes: float = pa.Field(nullable=True, ge=0, le=MAX_MINUTES)
    global_batch_size: float = pa.Field(nullable=True, ge=0, le=MAX_BATCH)
    # Fugaku's weak-scaling instances: 128 nodes of 0 accelerators; the largest systems: ~10^5 nodes
    number_of_nodes: float = pa.Field(nullable=True, ge=1, le=1e6)
    accelerators_per_node: float = pa.Field(nullable=True, ge=0, le=1e4)
    benchmark_logged: str = pa.Field(nullable=True)
    log_lines: int = pa.Field(nullable=True)
    mllog_lines: int = pa.Field(nullable=True)
    parse_errors: int = pa.Field(ge=0)
    first_parse_error: str = pa.Field(nullable=True)
    log_sha256: str = pa.Field(nullable=True, str_matches=r"^[0-9a-f]{64}$")
    values_nulled: str = pa.Field(nullable=True)  # as TrainingRun.values_nulled

    @pa.dataframe_check
    def scored_runs_have_a_positive_time(cls, data: PolarsData) -> pl.LazyFrame:
        """A run that counts (under either rules) must have stopped after it started."""
        return data.lazyframe.select(
            (pl.col("drop_reason").is_not_null() & pl.col("current_rules_drop_reason").is_not_null())
            | (pl.col("time_to_train_minutes") > 0)
        )


class HpcScaling(ScalingFactor):
    """`scaling.json` of one HPC benchmark folder, with its scale."""

    scale: str = pa.Field(isin=["strong", "weak"])


class InferenceResult(pa.DataFrameModel):
    """One MLPerf Inference result: the performance run's LoadGen summary and detail log
    (`<division>/<org>/results/<system>/<model>/<scenario>/performance/run_1/mlperf_log_{summary,detail}.txt`)."""

    round: str = pa.Field(str_matches=ROUND)
    division: str = pa.Field(str_length={"min_value": 1})
    submitter: str = pa.Field(str_length={"min_value": 1})
    system: str = pa.Field(str_length={"min_value": 1})
    model: str = pa.Field(str_length={"min_value": 1})
    model_folder: str
    model_known: bool  # the round's submission checker knows the model (inference_checker_facts.csv)
    model_mapped_by: str = pa.Field(nullable=True)  # what maps the folder to the model (None: its own name)
    counts: str = pa.Field(isin=["tokens", "samples"])
    scenario: str
    scenario_folder: str
    scenario_logged: str = pa.Field(nullable=True)
    location: str = pa.Field(unique=True)
    summary_file: str
    detail_file: str = pa.Field(nullable=True)
    checker_version: str = pa.Field(str_matches=ROUND)  # whose checker facts were applied
    checker_version_assumed: bool  # the round has no facts of its own: the nearest known round's
    sut_name: str = pa.Field(nullable=True)
    mode: str = pa.Field(nullable=True)
    result_valid: bool = pa.Field(nullable=True)
    performance_constraints_satisfied: bool = pa.Field(nullable=True)
    min_duration_satisfied: bool = pa.Field(nullable=True)
    min_queries_satisfied: bool = pa.Field(nullable=True)
    early_stopping_satisfied: bool = pa.Field(nullable=True)
    performance_result: float = pa.Field(nullable=True, gt=0, le=MAX_THROUGHPUT)
    performance_units: str = pa.Field(nullable=True, isin=values("inference_units"))
    mlcommons_units: str = pa.Field(nullable=True)
    performance_source: str = pa.Field(nullable=True)
    performance_log: str = pa.Field(nullable=True, isin=values("inference_metric_log"))
    performance_null_reason: str = pa.Field(nullable=True)
    inferred: bool
    samples_per_second: float = pa.Field(nullable=True, ge=0, le=MAX_THROUGHPUT)
    tokens_per_second: float = pa.Field(nullable=True, ge=0, le=MAX_THROUGHPUT)
    target_qps: float = pa.Field(nullable=True, ge=0, le=MAX_THROUGHPUT)
    target_latency_ms: float = pa.Field(nullable=True, ge=0, le=1e9)
    ttft_limit_ms: float = pa.Field(nullable=True, ge=0, le=1e9)
    tpot_limit_ms: float = pa.Field(nullable=True, ge=0, le=1e9)
    latency_p50_ms: float = pa.Field(nullable=True, ge=0, le=1e9)
    latency_p90_ms: float = pa.Field(nullable=True, ge=0, le=1e9)
    latency_p99_ms: float = pa.Field(nullable=True, ge=0, le=1e9)
    ttft_p99_ms: float = pa.Field(nullable=True, ge=0, le=1e9)
    tpot_p99_ms: float = pa.Field(nullable=True, ge=0, le=1e9)
    summary_sha256: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    drop_reason: str = pa.Field(nullable=True)
    power_submission: bool  # the result has a ranging run beside run_1: its power was measured
    # from MLCommons' results table (summary_results.json) when the archive ships it
    mlcommons_performance_result: float = pa.Field(nullable=True, gt=0, le=MAX_THROUGHPUT)  # NaN, ±inf: nulled
    mlcommons_table_units: str = pa.Field(nullable=True)
    power_result: float = pa.Field(nullable=True, gt=0, le=MAX_POWER_W)
    power_units: str = pa.Field(nullable=True)
    values_nulled: str = pa.Field(nullable=True)  # as TrainingRun.values_nulled


class InferenceSystem(SystemDescription):
    """One Inference systems file (`<division>/<org>/systems/<system>.json`)."""

    division_folder: str = pa.Field(isin=["closed", "open", "network"])
    system_type: str = pa.Field(nullable=True)  # datacenter, edge or both, as the file states it

    class Config:
        unique = ["round", "division_folder", "submitter", "system"]


# How quarantine reasons and `values_nulled` name a model (`MlperfRun.seed failed ...`): published values, which
# users' queries match, so they keep the names the models had before they were named by what they hold (each in
# two literals: a textual rename of the classes must leave these words alone).
SHOWN_AS: dict[str, str] = {
    "TrainingRun": "Mlperf" "Run", "TrainingEvent": "Mlperf" "Event", "TrainingPowerLog": "Mlperf" "PowerLog",
    "TrainingRcp": "Mlperf" "Rcp", "SystemDescription": "Mlperf" "System", "ScalingFactor": "Mlperf" "Scaling",
}

# Columns whose failed check nulls the value (the reason goes to the row's `values_nulled` and to the
# quarantine) instead of quarantining the row: what a log says of its run's metrics or its system's
# hardware must never take away a run the official scorer counts, or a system it lists. Keys,
# verdicts and times are not among them: a row whose keys fail is quarantined.
NULLED_ON_FAILURE: dict[str, tuple[str, ...]] = {
    "TrainingRun": (
        "global_batch_size", "convergence_progress", "convergence_counted_in", "seed", "steady_state_throughput",
        "precision_logged", "throughput_counting", "progress_counted_in", "progress_offset", "train_samples_logged",
    ),
    "HpcRun": ("global_batch_size", "number_of_nodes", "accelerators_per_node"),
    "InferenceResult": ("samples_per_second", "tokens_per_second", "target_qps", "target_latency_ms", "ttft_limit_ms",
                        "tpot_limit_ms", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "ttft_p99_ms",
                        "tpot_p99_ms", "mlcommons_performance_result", "power_result"),
    "TrainingPowerLog": ("conversion_eff", "interconnect_power_est_w", "agg_power_w_ms"),
    "InferenceSystem": (
        "division", "accelerators_per_node", "number_of_nodes", "accelerator_count", "host_processors_per_node",
        "precision_stated",
    ),
    "SystemDescription": (
        "division", "accelerators_per_node", "number_of_nodes", "accelerator_count", "host_processors_per_node",
        "precision_stated",
    ),
}
