"""One round's archive → validated Polars frames (runs, systems, scaling) plus quarantine, per suite."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.lib.mlperf.hpc import parse_hpc_round
from pipelines.lib.mlperf.inference import parse_inference_round
from pipelines.lib.mlperf.round_parser import parse_round
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.suites import HPC, INFERENCE, TRAINING, Suite
from pipelines.lib.staging.validation import quarantine_frame, validate_or_quarantine
from schemas import polars_schema
from schemas.mlperf import (
    NULLED_ON_FAILURE,
    SHOWN_AS,
    HpcRun,
    HpcScaling,
    InferenceResult,
    InferenceSystem,
    RoundRulesUsed,
    ScalingFactor,
    SystemDescription,
    TrainingEvent,
    TrainingPowerLog,
    TrainingRcp,
    TrainingRun,
)

# Column names and dtypes are the Pandera models' (schemas/mlperf.py), written down once there.
_RUN_TYPES = polars_schema(TrainingRun)
_SYSTEM_TYPES = polars_schema(SystemDescription)
_SCALING_TYPES = polars_schema(ScalingFactor)
_EVENT_TYPES = polars_schema(TrainingEvent)
_POWER_TYPES = polars_schema(TrainingPowerLog)
_RULES_TYPES = polars_schema(RoundRulesUsed)

TABLES = {"training_events": (_EVENT_TYPES, TrainingEvent, "run_file"),
          "training_runs": (_RUN_TYPES, TrainingRun, "run_file"),
          "training_systems": (_SYSTEM_TYPES, SystemDescription, "source_file"),
          "training_scaling": (_SCALING_TYPES, ScalingFactor, "scaling_file"),
          "training_power": (_POWER_TYPES, TrainingPowerLog, "power_file"),
          "training_rcp": (polars_schema(TrainingRcp), TrainingRcp, "benchmark"),
          "training_rules": (_RULES_TYPES, RoundRulesUsed, "ref")}
# MLPerf HPC: its own tables, so no query mixes an HPC round with the Training round of the same name.
HPC_TABLES = {"hpc_runs": (polars_schema(HpcRun), HpcRun, "run_file"),
              "hpc_systems": (_SYSTEM_TYPES, SystemDescription, "source_file"),
              "hpc_scaling": (polars_schema(HpcScaling), HpcScaling, "scaling_file"),
              "hpc_rules": (_RULES_TYPES, RoundRulesUsed, "ref")}
# MLPerf Inference: results (one LoadGen summary each) and systems.
INFERENCE_TABLES = {"inference_results": (polars_schema(InferenceResult), InferenceResult, "summary_file"),
                    "inference_systems": (polars_schema(InferenceSystem), InferenceSystem, "source_file")}
SUITE_TABLES = {TRAINING.name: TABLES, HPC.name: HPC_TABLES, INFERENCE.name: INFERENCE_TABLES}


def suite_tables(suite: Suite) -> dict[str, tuple]:
    return SUITE_TABLES[suite.name]


def empty_frame(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=(TABLES | HPC_TABLES | INFERENCE_TABLES)[table][0])


def inference_round_frames(archive: Path, round_version: str, rules: RoundRules | None = None) -> dict[str, pl.DataFrame]:
    """Parse, type and validate one MLPerf Inference round (no rules: LoadGen judged each run)."""
    parsed = parse_inference_round(archive, round_version)
    rows = {"inference_results": parsed.runs, "inference_systems": parsed.systems}
    return _validated(rows, INFERENCE_TABLES, parsed.quarantine, round_version, INFERENCE.quarantine_source)


def hpc_round_frames(archive: Path, round_version: str, rules: RoundRules) -> dict[str, pl.DataFrame]:
    """Parse, type and validate one MLPerf HPC round. Keys: the HPC_TABLES names and `quarantine`."""
    parsed = parse_hpc_round(archive, round_version, rules)
    rows = {"hpc_runs": parsed.runs, "hpc_systems": parsed.systems, "hpc_scaling": parsed.benchmarks}
    return _validated(rows, {t: v for t, v in HPC_TABLES.items() if t != "hpc_rules"}, parsed.quarantine,
                      round_version, HPC.quarantine_source)


def round_frames(archive: Path, round_version: str, rules: RoundRules) -> dict[str, pl.DataFrame]:
    """Parse, type and validate one round. Keys: the TABLES names and `quarantine`."""
    parsed = parse_round(archive, round_version, rules)
    rows = {"training_runs": parsed.runs, "training_systems": parsed.systems, "training_scaling": parsed.benchmarks,
            "training_power": parsed.power, "training_rcp": parsed.rcp}
    frames = _validated(rows, {t: v for t, v in TABLES.items() if t not in ("training_events", "training_rules")},
                        parsed.quarantine, round_version, TRAINING.quarantine_source)
    events = _events_frame(parsed.events, round_version, parsed.runs)
    good, bad = validate_or_quarantine(events, TrainingEvent, source=TRAINING.quarantine_source, partition=round_version,
                                       file_column="run_file", shown_as=SHOWN_AS.get(TrainingEvent.__name__))
    frames["training_events"] = good
    frames["quarantine"] = pl.concat([frames["quarantine"], bad])
    return frames


def rules_frame(row: dict) -> pl.DataFrame:
    """The one row saying which rules judged a round (RoundRulesUsed), typed and checked: it is written by
    staging, not parsed from the archive, so a failure is a bug, raised."""
    import pandera.errors

    frame = pl.DataFrame([row], schema=_RULES_TYPES)
    try:
        return RoundRulesUsed.validate(frame)
    except pandera.errors.SchemaError as exc:
        raise ValueError(f"rules of {row.get('round')}: {exc}") from exc


# Each suite's parse: archive, round, its rules (RoundRules(None, None) for Inference) → frames.
SUITE_FRAMES = {TRAINING.name: round_frames, HPC.name: hpc_round_frames, INFERENCE.name: inference_round_frames}


def _validated(rows: dict[str, list[dict]], tables: dict[str, tuple], quarantine: list[dict], round_version: str,
               source: str) -> dict[str, pl.DataFrame]:
    """Each table's rows typed and validated (failures quarantined, or nulled where the model says so)."""
    frames: dict[str, pl.DataFrame] = {}
    quarantined = [quarantine_frame(quarantine)]
    for table, (types, model, file_column) in tables.items():
        df = pl.DataFrame(rows[table], schema=types) if rows[table] else empty_frame(table)
        good, bad = validate_or_quarantine(df, model, source=source, partition=round_version, file_column=file_column,
                                           nulled_on_failure=NULLED_ON_FAILURE.get(model.__name__, ()),
                                           shown_as=SHOWN_AS.get(model.__name__))
        frames[table] = good
        quarantined.append(bad)
    frames["quarantine"] = pl.concat(quarantined)
    return frames


def _events_frame(events: dict[str, list], round_version: str, runs: list[dict]) -> pl.DataFrame:
    """Columnar all the way: a round has ~10^5 events; submitter/system/benchmark come from the run
    (the path alone does not say which folder is which: the v0.5 layout is deeper)."""
    base = {k: v for k, v in _EVENT_TYPES.items() if k not in ("round", "submitter", "system", "benchmark")}
    df = pl.DataFrame(events, schema=base)
    keys = pl.DataFrame(
        {c: [r[c] for r in runs] for c in ("run_file", "submitter", "system", "benchmark")},
        schema={c: pl.String for c in ("run_file", "submitter", "system", "benchmark")},
    )
    return df.join(keys, on="run_file", how="left", maintain_order="left").with_columns(
        pl.lit(round_version).alias("round"),
    ).select(list(_EVENT_TYPES))
