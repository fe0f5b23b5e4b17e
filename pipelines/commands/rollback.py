"""`mlperf-warehouse rollback [--to BUILD]`: republish an earlier kept build."""

from __future__ import annotations

import argparse

EXAMPLES = """examples:
  mlperf-warehouse rollback
  mlperf-warehouse rollback --to mlperf-20260101T060000000000Z.duckdb   # a kept build named by `status`"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "rollback", help="republish the previous kept build (or --to a named one)",
        description="Publish an earlier kept build again, atomically (readers keep the file they opened).",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--to", metavar="BUILD",
                   help="build file name or stamp, e.g. mlperf-20260101T060000000000Z.duckdb (see `status`)")
    p.add_argument("--warehouse-dir", metavar="DIR", help="default: MLPERF_WAREHOUSE_DIR or ./warehouse")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.commands import UsageError
    from pipelines.lib.warehouse.publish import rollback

    try:
        record = rollback(Path(args.warehouse_dir).resolve() if args.warehouse_dir else None, args.to)
    except ValueError as exc:
        if args.to and "no complete kept build named" in str(exc):
            raise UsageError(str(exc)) from None  # a typo in --to: exit 2 with the kept builds
        raise
    print(f"published {record['build']} (built {record['built_at']}), was {record['rolled_back_from']}")
    return 0
