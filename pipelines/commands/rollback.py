"""`mlperf-warehouse rollback [--to BUILD]`: republish an earlier kept build."""

from __future__ import annotations

import argparse

from pipelines.commands import add_warehouse_dir, warehouse_base

EXAMPLES = """examples:
  mlperf-warehouse rollback
  mlperf-warehouse rollback --to mlperf-20260101T060000000000Z.duckdb   # a kept build named by `status`
  MLPERF_CATALOG=postgresql://... mlperf-warehouse rollback --to 12   # team mode: a kept snapshot (`status`)"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "rollback", help="republish the previous kept build (or --to a named one)",
        description="Publish an earlier kept build again, atomically (readers keep the file they opened). In team "
        "mode (MLPERF_CATALOG) the team catalog's previous snapshot is committed again as a new snapshot.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--to", metavar="BUILD",
                   help="build file name or stamp, e.g. mlperf-20260101T060000000000Z.duckdb; in team mode a "
                   "snapshot id or its build's name (see `status`)")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:

    from pipelines.commands import UsageError
    from pipelines.lib.warehouse.store import rollback
    from pipelines.lib.warehouse.team import team_catalog

    catalog = team_catalog()
    if catalog is not None:  # the team's warehouse is the lake: its earlier snapshot, as a new one
        from pipelines.lib.warehouse.lake_publish import rollback_lake

        try:
            record = rollback_lake(catalog, args.to)
        except ValueError as exc:
            if args.to and "no kept snapshot named" in str(exc):
                raise UsageError(str(exc)) from None
            raise
        print(f"team catalog {catalog.shown}: snapshot {record['snapshot']} holds build {record.get('build')} "
              f"(built {record.get('built_at')}) as snapshot {record['to_snapshot']} did; was "
              f"{record['rolled_back_from']}")
        return 0

    try:
        record = rollback(warehouse_base(args), args.to)
    except ValueError as exc:
        if args.to and "no complete kept build named" in str(exc):
            raise UsageError(str(exc)) from None  # a typo in --to: exit 2 with the kept builds
        raise
    print(f"published {record['build']} (built {record['built_at']}), was {record['rolled_back_from']}")
    return 0
