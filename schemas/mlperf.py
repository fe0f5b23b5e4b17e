"""Pandera models of the tables parsed from MLPerf Training result archives."""

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

ROUND = r"^v\d+\.\d+$"


class MlperfEvent(pa.DataFrameModel):
    """One timeline line of a result log (run, init, block, epoch and eval events)."""

    round: str = pa.Field(str_matches=ROUND)
    run_file: str
    lineno: int = pa.Field(ge=0)
    time_ms: float = pa.Field(ge=0)
    key: str = pa.Field(isin=[
        "init_start", "init_stop", "run_start", "run_stop", "block_start", "block_stop",
        "epoch_start", "epoch_stop", "eval_accuracy",
    ])
    value: float = pa.Field(nullable=True)
    epoch_count: float = pa.Field(nullable=True, ge=0)
    samples_count: float = pa.Field(nullable=True, ge=0)


class MlperfRun(pa.DataFrameModel):
    """One result log (`results/<system>/<benchmark>/result_*.txt`)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str = pa.Field(str_length={"min_value": 1})
    system: str = pa.Field(str_length={"min_value": 1})
    benchmark: str = pa.Field(str_length={"min_value": 1})
    run_file: str = pa.Field(unique=True)
    passed_compliance: bool
    drop_reason: str = pa.Field(nullable=True)
    current_rules_drop_reason: str = pa.Field(nullable=True)
    run_start_ms: float = pa.Field(nullable=True, ge=0)
    run_stop_ms: float = pa.Field(nullable=True, ge=0)
    time_to_train_minutes: float = pa.Field(nullable=True)
    global_batch_size: float = pa.Field(nullable=True, ge=0)
    samples_to_converge: float = pa.Field(nullable=True, ge=0)
    seed: float = pa.Field(nullable=True)
    steady_state_throughput: float = pa.Field(nullable=True, ge=0)
    throughput_unit: str = pa.Field(nullable=True)
    parse_errors: int = pa.Field(ge=0)
    log_sha256: str = pa.Field(nullable=True, str_matches=r"^[0-9a-f]{64}$")
    precision_logged: str = pa.Field(nullable=True, isin=["fp4", "fp8", "bf16", "fp16"])
    throughput_counting: str = pa.Field(
        nullable=True, isin=["running_total", "block_count", "epoch_markers", "eval_markers"])
    progress_counted_in: str = pa.Field(nullable=True, isin=["epochs", "samples"])
    throughput_null_reason: str = pa.Field(nullable=True)
    progress_offset: float = pa.Field(nullable=True, ge=0)

    @pa.dataframe_check
    def scored_runs_have_a_positive_time(cls, data: PolarsData) -> pl.LazyFrame:
        """A run that counts (under either rules) must have stopped after it started."""
        return data.lazyframe.select(
            (pl.col("drop_reason").is_not_null() & pl.col("current_rules_drop_reason").is_not_null())
            | (pl.col("time_to_train_minutes") > 0)
        )


class MlperfSystem(pa.DataFrameModel):
    """One system description (`systems/<system>.json`)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str = pa.Field(str_length={"min_value": 1})
    system: str = pa.Field(str_length={"min_value": 1})
    system_name: str
    division: str = pa.Field(nullable=True, isin=["closed", "open"])
    availability: str = pa.Field(nullable=True)
    accelerator_model_name: str = pa.Field(nullable=True)
    accelerators_per_node: int = pa.Field(nullable=True, ge=0, le=100_000)
    number_of_nodes: int = pa.Field(nullable=True, ge=0, le=100_000)
    accelerator_count: int = pa.Field(nullable=True, ge=0)
    precision_stated: str = pa.Field(nullable=True, isin=["fp4", "fp8", "bf16"])

    class Config:
        unique = ["round", "submitter", "system"]


class MlperfScaling(pa.DataFrameModel):
    """`scaling.json` of one benchmark folder (the RCP scaling factor)."""

    round: str = pa.Field(str_matches=ROUND)
    submitter: str
    system: str
    benchmark: str
    scaling_factor: float = pa.Field(nullable=True, gt=0, le=100)
