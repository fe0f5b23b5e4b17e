"""`mlperf-warehouse shell [--python]`: an interactive, read-only session on the published warehouse."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("shell", help="open the duckdb CLI (or a Python REPL) read-only on the warehouse")
    p.add_argument("--python", action="store_true", help="Python REPL even when the duckdb CLI is installed")
    p.add_argument("--warehouse-dir", help="default: MLPERF_WAREHOUSE_DIR or ./warehouse")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import shutil
    import subprocess
    from pathlib import Path

    from pipelines.lib.paths import published_db
    from pipelines.lib.query import WarehouseMissing

    path = published_db(Path(args.warehouse_dir).resolve() if args.warehouse_dir else None)
    if not path.exists():
        raise WarehouseMissing(f"no published warehouse at {path}; run `mlperf-warehouse refresh` first")
    cli = None if args.python else shutil.which("duckdb")
    if cli:
        # -readonly: a refresh can publish meanwhile; this session keeps the file it opened.
        return subprocess.call([cli, "-readonly", str(path)])
    return _python_repl(path)


def _python_repl(path) -> int:
    import code

    import duckdb
    import polars as pl

    from pipelines.lib.query import connect_readonly

    with connect_readonly(path) as con:
        banner = (f"read-only DuckDB connection `con` on {path}; polars as `pl`.\n"
                  'e.g. con.sql("select * from fct_training_result limit 5").pl()')
        code.interact(banner=banner, local={"con": con, "duckdb": duckdb, "pl": pl}, exitmsg="")
    return 0
