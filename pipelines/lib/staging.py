"""Write and list staged Parquet files (atomically: temp file, then rename)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import polars as pl

from .paths import ensure_inside, staging_dir


def write_staged(table: str, partition: str, df: pl.DataFrame, base: Path | None = None) -> Path:
    directory = staging_dir(table, base)
    target = ensure_inside(directory / f"{partition}.parquet", base)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{partition}.{uuid.uuid4().hex}.tmp"
    try:
        df.write_parquet(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def staged_files(table: str, base: Path | None = None) -> list[Path]:
    directory = staging_dir(table, base)
    return sorted(directory.glob("*.parquet")) if directory.exists() else []
