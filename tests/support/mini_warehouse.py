"""A tiny but real warehouse: staged frames written like the parser does, then `warehouse.build`."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.lib.mlperf.tables import TABLES
from pipelines.lib.staging.files import write_staged
from pipelines.lib.staging.validation import QUARANTINE_SCHEMA


def stage_round(base: Path, round_version: str, systems: int = 2, runs_per_system: int = 5) -> None:
    """`systems` systems, each with one benchmark scored from `runs_per_system` runs."""
    run_types, system_types, scaling_types = (TABLES[t][0] for t in ("training_runs", "training_systems", "training_scaling"))
    runs = [
        {"round": round_version, "submitter": "acme", "system": f"sys{s}", "benchmark": "bert",
         "run_file": f"acme/results/sys{s}/bert/result_{i}.txt", "status": "success",
         "time_to_train_minutes": 10.0 + i + s, "global_batch_size": 256.0, "log_lines": 100, "mllog_lines": 90,
         "parse_errors": 0}
        for s in range(systems) for i in range(runs_per_system)
    ]
    system_rows = [
        {"round": round_version, "submitter": "acme", "system": f"sys{s}", "system_name": f"Acme {s}",
         "division": "closed", "accelerator_model_name": "H100", "accelerators_per_node": 8, "number_of_nodes": s + 1,
         "accelerator_count": 8 * (s + 1), "source_file": f"acme/systems/sys{s}.json"}
        for s in range(systems)
    ]
    quarantine = [{"source": "mlperf", "partition": round_version, "file": "acme/bad.txt", "reason": "unparseable"}]
    write_staged("training_runs", round_version, pl.DataFrame(runs, schema=run_types), base)
    write_staged("training_systems", round_version, pl.DataFrame(system_rows, schema=system_types), base)
    write_staged("training_scaling", round_version, pl.DataFrame(schema=scaling_types), base)
    write_staged("quarantine", round_version, pl.DataFrame(quarantine, schema=QUARANTINE_SCHEMA), base)


def build_warehouse(base: Path, rounds=("v4.1", "v5.0"), systems: int = 2):
    from pipelines.lib.warehouse import build as warehouse

    for r in rounds:
        stage_round(base, r, systems)
    return warehouse.build(base)
