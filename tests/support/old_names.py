"""A warehouse as it was while Training's names were "mlperf", made from one written with today's names: the old
names written down here once, apart from the migration that reads its own copy (a test of it compares the two)."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

OLD_TABLES = {f"training_{t}": f"mlperf_{t}" for t in ("runs", "systems", "scaling", "rules", "rcp", "power", "events")}
OLD_FILE_PREFIX, NEW_FILE_PREFIX = "mlperf-", "training-"  # quarantine files and parse markers: `mlperf-v4.1`
OLD_PARTITIONS, NEW_PARTITIONS = "mlperf_round", "training_round"


def old_names(base: Path) -> list[Path]:
    """Every staged path of `base` that has an old name."""
    staging = base / "staging"
    return sorted([*(staging / old for old in OLD_TABLES.values() if (staging / old).exists()),
                   *staging.glob(f"quarantine/{OLD_FILE_PREFIX}*"), *staging.glob(f"_meta/{OLD_FILE_PREFIX}*")])


def rename_back(base: Path, instance: dg.DagsterInstance) -> list[Path]:
    """Give `base`'s staged files and its instance's Training partitions their old names; the staged files renamed
    (each as it is now named), so a test can check that every one comes back."""
    staging = base / "staging"
    renamed = []
    for new, old in OLD_TABLES.items():
        if (staging / new).exists():
            renamed += sorted((staging / new).iterdir())
            os.rename(staging / new, staging / old)
    for path in sorted([*staging.glob(f"quarantine/{NEW_FILE_PREFIX}*"), *staging.glob(f"_meta/{NEW_FILE_PREFIX}*")]):
        os.rename(path, path.with_name(OLD_FILE_PREFIX + path.name.removeprefix(NEW_FILE_PREFIX)))
        renamed.append(path)
    rounds = instance.get_dynamic_partitions(NEW_PARTITIONS)
    instance.add_dynamic_partitions(OLD_PARTITIONS, rounds)
    for round_version in rounds:
        instance.delete_dynamic_partition(NEW_PARTITIONS, round_version)
    return renamed
