"""Write and list staged Parquet files (atomically: temp file, then rename)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.lib.io.files import atomic_write
from pipelines.lib.io.paths import ensure_inside, staging_dir
from pipelines.lib.io.text import CONTROL_PATTERN


def clean_text_columns(df: pl.DataFrame) -> pl.DataFrame:
    """Every text column without control characters (lib.io.text): names and messages from upstream reach
    terminals, pages and spreadsheets as text only."""
    text = [name for name, dtype in df.schema.items() if dtype == pl.String]
    return df.with_columns(pl.col(text).str.replace_all(CONTROL_PATTERN, "")) if text else df


def write_staged(table: str, partition: str, df: pl.DataFrame, base: Path | None = None) -> Path:
    """Stage one partition of a table (text columns cleaned of control characters)."""
    df = clean_text_columns(df)
    directory = staging_dir(table, base)
    target = ensure_inside(directory / f"{partition}.parquet", base)
    directory.mkdir(parents=True, exist_ok=True)
    return atomic_write(target, df.write_parquet)


def staged_files(table: str, base: Path | None = None) -> list[Path]:
    directory = staging_dir(table, base)
    return sorted(directory.glob("*.parquet")) if directory.exists() else []
