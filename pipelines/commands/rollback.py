"""`mlperf-warehouse rollback [--to BUILD]`: republish an earlier kept build."""

from __future__ import annotations

import argparse

from pipelines.commands import add_warehouse_dir, warehouse_base

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
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:

    from pipelines.commands import UsageError
    from pipelines.lib.warehouse.publish import rollback

    try:
        record = rollback(warehouse_base(args), args.to)
    except ValueError as exc:
        if args.to and "no complete kept build named" in str(exc):
            raise UsageError(str(exc)) from None  # a typo in --to: exit 2 with the kept builds
        raise
    print(f"published {record['build']} (built {record['built_at']}), was {record['rolled_back_from']}")
    return 0
