"""Write and list staged Parquet files (atomically: temp file, then rename)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Callable

import polars as pl

from pipelines.lib.io.paths import ensure_inside, staging_dir


def atomic_write(target: Path, write: Callable[[Path], object]) -> Path:
    """`write(temp_path)` beside `target`, then rename onto it: readers see the old or the new file."""
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def write_staged(table: str, partition: str, df: pl.DataFrame, base: Path | None = None) -> Path:
    directory = staging_dir(table, base)
    target = ensure_inside(directory / f"{partition}.parquet", base)
    directory.mkdir(parents=True, exist_ok=True)
    return atomic_write(target, df.write_parquet)


def staged_files(table: str, base: Path | None = None) -> list[Path]:
    directory = staging_dir(table, base)
    return sorted(directory.glob("*.parquet")) if directory.exists() else []
