"""The one-time move of a warehouse from Training's `mlperf` names to its `training` names: its staged files
(`lib/mlperf/training_rename.py`) and its instance's Training partitions (`mlperf_round` → `training_round`).

The CLI's refresh runs it first, under the refresh lock; every round job's results archive runs it too, so a
`dg dev` run on an old warehouse moves it before it stages anything. Idempotent: with nothing under an old name
it does nothing. A migration stopped part-way is finished by the next: files move one by one, and partitions are
added under the new name before the old ones are deleted.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipelines.lib.mlperf.suites import TRAINING
from pipelines.lib.mlperf.training_rename import move_staged_files
from pipelines.lib.warehouse import preflight

OLD_PARTITIONS = "mlperf_round"  # Training's dynamic partitions as they were named


def migrate_training_names(instance: dg.DagsterInstance, base: Path) -> str | None:
    """Move what is still under Training's old names; what was moved, or None when nothing was."""
    moved = move_staged_files(base)
    if moved:  # its digest of the staged files named the old files
        preflight.forget(base)
    old_rounds = instance.get_dynamic_partitions(OLD_PARTITIONS)
    partitions = TRAINING.definitions.partitions
    missing = [r for r in old_rounds if not instance.has_dynamic_partition(partitions, r)]
    if missing:
        instance.add_dynamic_partitions(partitions, missing)
    for round_version in old_rounds:
        instance.delete_dynamic_partition(OLD_PARTITIONS, round_version)
    if not moved and not old_rounds:
        return None
    return (f"Training's names: {len(moved)} staged files moved to {TRAINING.staged_prefix}*/{TRAINING.quarantine_prefix}*,"
            f" {len(old_rounds)} {OLD_PARTITIONS} partitions now {partitions}")
