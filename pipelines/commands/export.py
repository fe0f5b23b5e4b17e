"""`mlperf-warehouse export --format parquet|csv|mlcommons-summary --out DIR [--tables t1,t2]`: files for BI
tools, or the published results as MLCommons' summary_results.json."""

from __future__ import annotations

import argparse

from pipelines.commands import add_warehouse_dir, warehouse_base

EXAMPLES = """examples:
  mlperf-warehouse export --out exports/
  mlperf-warehouse export --format csv --tables fct_training_result,dim_system --out exports-csv/
  mlperf-warehouse export --format mlcommons-summary --out summary/   # summary_results.json"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export", help="write the public tables as Parquet or CSV with a manifest.json",
        description="Write the public dim_/fct_/mart_ tables as files any BI tool reads, with a manifest.json.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", choices=["parquet", "csv", "mlcommons-summary"], default="parquet",
                   help="parquet (default), csv, or mlcommons-summary: one summary_results.json record per published "
                        "result, in the fields of MLCommons' results table")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output directory (replaced; must be empty or a previous export)")
    p.add_argument("--tables", metavar="T,T",
                   help="comma-separated table names (default: every dim_/fct_/mart_ table and view)")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.commands import unknown
    from pipelines.lib.warehouse.exports import export, public_tables
    from pipelines.lib.warehouse.query import connect_published

    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    base = warehouse_base(args)
    if tables:
        with connect_published(base) as con:
            available = list(public_tables(con))
        for table in tables:
            if table not in available:
                raise unknown("table", table, available)
    manifest = export(Path(args.out), args.format, tables, base)
    for t in manifest["tables"]:
        print(f"{t['name']:<28} {t['rows']:>9} rows  {t['path']}")
    print(f"build {manifest['built_at']} ({manifest['fingerprint'][:12]}) exported to {Path(args.out).resolve()}")
    return 0
