"""Staged files of a warehouse written while Training's names were "mlperf", moved to Training's names once.

Training's staged tables were `mlperf_<table>` and its quarantine files and parse markers `mlperf-<round>`; they
are `TRAINING.staged_prefix` and `TRAINING.quarantine_prefix` now. A move keeps a file's content, size and
modification time, so a round's marker still matches its staged files and nothing is downloaded or parsed again.
Each file moves by itself (`os.replace`): a migration stopped part-way leaves files under both names, and the
next one moves the rest.
"""

from __future__ import annotations

import os
from pathlib import Path

from pipelines.lib.io.paths import staging_dir
from pipelines.lib.mlperf.suites import TRAINING
from pipelines.lib.mlperf.tables import suite_tables

OLD_STAGED_PREFIX = "mlperf_"  # Training's staged tables: `mlperf_runs`
OLD_FILE_PREFIX = "mlperf-"  # Training's quarantine files and parse markers: `mlperf-v4.1`
# The folders of `staging/` whose files are named by the round with the suite's file prefix (stage.py).
_PREFIXED_FOLDERS = (("quarantine", ".parquet"), ("_meta", ".json"))


def old_table(table: str) -> str:
    """Training's staged table as it was named: `training_runs` → `mlperf_runs`."""
    return OLD_STAGED_PREFIX + table.removeprefix(TRAINING.staged_prefix)


def renamed_from(table: str) -> str:
    """A staged table's name before Training's names said Training (another suite's, or the quarantine: its own)."""
    return old_table(table) if table in suite_tables(TRAINING) else table


def pending_moves(base: Path) -> list[tuple[Path, Path]]:
    """Each staged file still under an old name, with the name it moves to."""
    staging = staging_dir("", base)
    moves = []
    for table in suite_tables(TRAINING):
        old = staging / old_table(table)
        if old.is_dir():
            moves += [(path, staging / table / path.name) for path in sorted(old.iterdir()) if path.is_file()]
    for folder, suffix in _PREFIXED_FOLDERS:
        directory = staging / folder
        if directory.is_dir():
            moves += [(path, path.with_name(TRAINING.quarantine_prefix + path.name.removeprefix(OLD_FILE_PREFIX)))
                      for path in sorted(directory.glob(f"{OLD_FILE_PREFIX}*{suffix}"))]
    return moves


def move_staged_files(base: Path) -> list[tuple[Path, Path]]:
    """Move every staged file of Training to its name (none left: nothing happens) and remove the emptied
    folders; the moves made. A file already under its new name was written by this code, and wins."""
    moves = pending_moves(base)
    for old, new in moves:
        new.parent.mkdir(parents=True, exist_ok=True)
        try:
            if new.exists():
                old.unlink()
            else:
                os.replace(old, new)
        except FileNotFoundError:  # another run's migration moved it first
            pass
    staging = staging_dir("", base)
    for table in suite_tables(TRAINING):
        try:
            (staging / old_table(table)).rmdir()
        except OSError:  # absent, or still holds a folder of its own (left as found)
            pass
    return moves
