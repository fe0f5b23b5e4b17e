"""`mlperf-warehouse query "SQL"`: read-only SQL on the published warehouse."""

from __future__ import annotations

import argparse
import csv
import json
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("query", help="run SQL read-only on the published warehouse")
    p.add_argument("sql")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--warehouse-dir", help="default: MLPERF_WAREHOUSE_DIR or ./warehouse")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.lib.paths import published_db
    from pipelines.lib.query import connect_readonly

    base = Path(args.warehouse_dir).resolve() if args.warehouse_dir else None
    with connect_readonly(published_db(base)) as con:
        cursor = con.execute(args.sql)
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall()
    if args.format == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    elif args.format == "json":
        json.dump([dict(zip(columns, r)) for r in rows], sys.stdout, default=str, indent=1)
        print()
    else:
        print(render_table(columns, rows))
    return 0


def render_table(columns: list[str], rows: list[tuple], max_width: int = 60) -> str:
    cells = [[("NULL" if v is None else str(v))[:max_width] for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)
