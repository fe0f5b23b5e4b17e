"""`mlperf-warehouse refresh`: run the Dagster assets in-process, then publish the warehouse."""

from __future__ import annotations

import argparse
import os
import sys
import time


def register(subparsers) -> None:
    p = subparsers.add_parser("refresh", help="fetch, parse, validate, build and publish the warehouse")
    p.add_argument("--rounds", help="comma-separated rounds, e.g. v4.1,v5.0 (default: MLPERF_ROUNDS or all known)")
    p.add_argument("--results-url-template", help="URL template with {version}; http(s), file:// or a path")
    p.add_argument("--no-prices", action="store_true", help="skip the cloud price lists")
    p.add_argument("--warehouse-dir", help="where the warehouse lives (default: MLPERF_WAREHOUSE_DIR or ./warehouse)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.warehouse_dir:
        os.environ["MLPERF_WAREHOUSE_DIR"] = str(args.warehouse_dir)
    from pipelines.lib.redaction import redact
    from pipelines.lib.refresh_job import refresh
    from pipelines.lib.rounds import configured_rounds, normalize_round

    rounds = [normalize_round(r) for r in args.rounds.split(",")] if args.rounds else configured_rounds()
    started = time.perf_counter()
    summary = refresh(
        rounds,
        url_template=args.results_url_template,
        prices=not args.no_prices,
        progress=lambda msg: print(redact(msg), file=sys.stderr, flush=True),
    )
    print(redact(summary.render()))
    print(f"total {time.perf_counter() - started:.1f}s")
    return 0 if summary.ok else 1
