"""`mlperf-warehouse site --out DIR [--rounds v4.1,v5.0]`: the static results site."""

from __future__ import annotations

import argparse

from pipelines.commands import add_warehouse_dir, warehouse_base

EXAMPLES = """examples:
  mlperf-warehouse site --out site/ && xdg-open site/index.html
  mlperf-warehouse site --out site/ --rounds v4.1,v5.0 --no-reports"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "site", help="write the static results site (HTML, works offline from a folder)",
        description="Write the static results site: an index of rounds, per round a table of systems × "
        "benchmarks with filters and sorting, a scaling and cost report per benchmark, a page per system; a page "
        "per MLPerf HPC round (strong scores, weak throughput).",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory, e.g. site/")
    p.add_argument("--rounds", metavar="V,V",
                   help="comma-separated rounds, e.g. v4.1,v5.0, of either suite (default: every round in the warehouse)")
    p.add_argument("--no-reports", action="store_true", help="skip the per-benchmark reports (faster)")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.lib.report.site import write_site
    from pipelines.lib.warehouse.query import connect_published

    base = warehouse_base(args)
    from pipelines.commands import parse_rounds

    rounds = parse_rounds(args.rounds or "") or None
    with connect_published(base) as con:
        site = write_site(con, Path(args.out), rounds, reports=not args.no_reports)
    for note in site.notes:
        print(f"note:   {note}")
    print(f"site:   {site.index} ({len(site.rounds)} Training rounds, {len(site.reports)} reports, "
          f"{site.system_pages} system pages; {len(site.hpc_rounds)} HPC rounds)")
    return 2 if rounds and not site.rounds else 0
