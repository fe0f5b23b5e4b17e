"""`mlperf-warehouse status`: the published build, its rounds and prices, kept builds, last refresh."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("status", help="show the published build, rounds, price snapshots and last refresh")
    p.add_argument("--warehouse-dir", help="default: MLPERF_WAREHOUSE_DIR or ./warehouse")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from pipelines.lib.status import warehouse_status

    status = warehouse_status(Path(args.warehouse_dir).resolve() if args.warehouse_dir else None)
    if args.json:
        print(json.dumps(status, indent=2, default=str))
        return 0
    if status["damaged"]:
        published = status["published"] or {}
        print(f"published file DAMAGED: {status['path']}: {status['damaged']}")
        print(f"  published.json says: build {published.get('build', '?')} built at {published.get('built_at', '?')}")
        print("  the next refresh republishes the newest kept build that opens; or run `mlperf-warehouse rollback`")
    elif status["built_at"] is None:
        print(f"no published warehouse at {status['path']}; run `mlperf-warehouse refresh`")
    else:
        published = (status["published"] or {}).get("build", "?")
        print(f"published: {status['path']}\n  built at {status['built_at']}  build {published}")
        print(f"  fingerprint {status['fingerprint']}")
        print(f"  rounds ({len(status['rounds'])}): {', '.join(status['rounds']) or 'none'}")
        for provider, fetched_at in status["prices"].items():
            print(f"  prices {provider}: latest snapshot {fetched_at}")
    print(f"kept builds ({len(status['builds'])}): " + ", ".join(status["builds"]))
    last = status["last_refresh"]
    if last:
        print(f"last refresh: {'ok' if last.get('ok') else 'FAILED'} at {last.get('at')}: {last.get('detail')}")
    else:
        print("last refresh: no record")
    return 0
