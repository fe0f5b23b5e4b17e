"""`mlperf-warehouse export --format parquet|csv --out DIR [--tables t1,t2]`: files for BI tools."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("export", help="write the public tables as Parquet or CSV with a manifest.json")
    p.add_argument("--format", choices=["parquet", "csv"], default="parquet")
    p.add_argument("--out", required=True, help="output directory (replaced; must be empty or a previous export)")
    p.add_argument("--tables", help="comma-separated table names (default: every dim_/fct_/mart_ table and view)")
    p.add_argument("--warehouse-dir", help="default: MLPERF_WAREHOUSE_DIR or ./warehouse")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.lib.exports import export

    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    base = Path(args.warehouse_dir).resolve() if args.warehouse_dir else None
    manifest = export(Path(args.out), args.format, tables, base)
    for t in manifest["tables"]:
        print(f"{t['name']:<28} {t['rows']:>9} rows  {t['path']}")
    print(f"build {manifest['built_at']} ({manifest['fingerprint'][:12]}) exported to {Path(args.out).resolve()}")
    return 0
