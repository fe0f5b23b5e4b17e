"""`mlperf-warehouse rollback [--to BUILD]`: republish an earlier kept build."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("rollback", help="republish the previous kept build (or --to a named one)")
    p.add_argument("--to", help="build file name or stamp, e.g. mlperf-20260101T060000000000Z.duckdb (see `status`)")
    p.add_argument("--warehouse-dir", help="default: MLPERF_WAREHOUSE_DIR or ./warehouse")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.lib.publishing import rollback

    record = rollback(Path(args.warehouse_dir).resolve() if args.warehouse_dir else None, args.to)
    print(f"published {record['build']} (built {record['built_at']}), was {record['rolled_back_from']}")
    return 0
