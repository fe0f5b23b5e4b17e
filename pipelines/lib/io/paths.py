"""Where the warehouse lives. Every file the pipeline writes goes under `warehouse_dir()`."""

from __future__ import annotations

from pathlib import Path

from pipelines.lib.io.context import current

# Relative to the current directory: a checkout gets its git-ignored warehouse/, an installed copy the
# directory it runs in; never a folder inside site-packages.
DEFAULT_WAREHOUSE_DIR = Path("warehouse")


def warehouse_dir() -> Path:
    """The warehouse directory: the active run context's (the settings layer's, from `MLPERF_WAREHOUSE_DIR` or
    `--warehouse-dir`), else `./warehouse` under the current directory."""
    return current().warehouse_dir or DEFAULT_WAREHOUSE_DIR.resolve()


def published_db(base: Path | None = None) -> Path:
    return (base or warehouse_dir()) / "mlperf.duckdb"


def raw_dir(source: str, base: Path | None = None) -> Path:
    return (base or warehouse_dir()) / "raw" / source


def staging_dir(source: str, base: Path | None = None) -> Path:
    """Parsed, validated Parquet files that the build loads into DuckDB."""
    return (base or warehouse_dir()) / "staging" / source


def builds_dir(base: Path | None = None) -> Path:
    return (base or warehouse_dir()) / "builds"


def extensions_dir(base: Path | None = None) -> Path:
    """DuckDB's extension folder for this warehouse (DuckDB's own layout), filled from the extensions' PyPI
    packages: a BI tool's DuckDB loads them from here by name (its `extension_directory`)."""
    return (base or warehouse_dir()) / "duckdb-extensions"


def ensure_inside(path: Path, base: Path | None = None) -> Path:
    """Refuse any path that would escape the warehouse directory."""
    root = (base or warehouse_dir()).resolve()
    resolved = path.resolve()
    if resolved != root and root not in resolved.parents:
        raise ValueError(f"refusing to write outside the warehouse directory: {resolved}")
    return resolved
