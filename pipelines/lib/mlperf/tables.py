"""One round's archive → validated Polars frames (runs, systems, scaling) plus quarantine."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.lib.mlperf.round_parser import RoundRules, parse_round
from pipelines.lib.warehouse.validation import quarantine_frame, validate_or_quarantine
from schemas.mlperf import MlperfEvent, MlperfRun, MlperfScaling, MlperfSystem

_RUN_TYPES = {
    "round": pl.String, "submitter": pl.String, "system": pl.String, "benchmark": pl.String,
    "run_file": pl.String, "ruleset": pl.String, "ruleset_ref": pl.String, "passed_compliance": pl.Boolean,
    "drop_reason": pl.String, "current_rules_drop_reason": pl.String,
    "status": pl.String, "run_start_ms": pl.Float64, "run_stop_ms": pl.Float64,
    "time_to_train_minutes": pl.Float64, "global_batch_size": pl.Float64, "samples_to_converge": pl.Float64,
    "seed": pl.Float64, "benchmark_logged": pl.String, "steady_state_throughput": pl.Float64,
    "throughput_unit": pl.String, "log_lines": pl.Int64, "mllog_lines": pl.Int64, "parse_errors": pl.Int64,
    "first_parse_error": pl.String, "log_sha256": pl.String,
    "precision_logged": pl.String, "precision_evidence": pl.String,
    "throughput_counting": pl.String, "progress_counted_in": pl.String, "throughput_null_reason": pl.String,
    "progress_offset": pl.Float64,
}
_SYSTEM_TYPES = {
    "round": pl.String, "submitter": pl.String, "system": pl.String, "system_name": pl.String,
    "submitter_declared": pl.String, "division": pl.String, "availability": pl.String,
    "availability_category": pl.String, "accelerator_model_name": pl.String,
    "accelerators_per_node": pl.Int64, "number_of_nodes": pl.Int64, "accelerator_count": pl.Int64,
    "host_processor_model_name": pl.String, "host_processors_per_node": pl.Int64, "framework": pl.String,
    "official_fields_missing": pl.String, "repaired_keys": pl.String, "source_file": pl.String,
    "precision_stated": pl.String, "precision_evidence": pl.String,
}
_SCALING_TYPES = {
    "round": pl.String, "submitter": pl.String, "system": pl.String, "benchmark": pl.String,
    "scaling_factor": pl.Float64, "scaling_file": pl.String, "scaling_problem": pl.String,
}

_EVENT_TYPES = {
    "round": pl.String, "submitter": pl.String, "system": pl.String, "benchmark": pl.String,
    "run_file": pl.String, "lineno": pl.Int64, "time_ms": pl.Float64, "key": pl.String, "value": pl.Float64,
    "epoch_num": pl.Float64, "first_epoch_num": pl.Float64, "epoch_count": pl.Float64,
    "samples_count": pl.Float64, "status": pl.String,
}

TABLES = {"mlperf_events": (_EVENT_TYPES, MlperfEvent, "run_file"),
          "mlperf_runs": (_RUN_TYPES, MlperfRun, "run_file"),
          "mlperf_systems": (_SYSTEM_TYPES, MlperfSystem, "source_file"),
          "mlperf_scaling": (_SCALING_TYPES, MlperfScaling, "scaling_file")}


def empty_frame(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=TABLES[table][0])


def round_frames(archive: Path, round_version: str, rules: RoundRules) -> dict[str, pl.DataFrame]:
    """Parse, type and validate one round. Keys: the TABLES names and `quarantine`."""
    parsed = parse_round(archive, round_version, rules)
    rows = {"mlperf_runs": parsed.runs, "mlperf_systems": parsed.systems, "mlperf_scaling": parsed.benchmarks}
    frames: dict[str, pl.DataFrame] = {}
    quarantined = [quarantine_frame(parsed.quarantine)]
    for table, (types, model, file_column) in TABLES.items():
        if table == "mlperf_events":
            df = _events_frame(parsed.events, round_version, parsed.runs)
        else:
            df = pl.DataFrame(rows[table], schema=types) if rows[table] else empty_frame(table)
        good, bad = validate_or_quarantine(df, model, source="mlperf", partition=round_version, file_column=file_column)
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
