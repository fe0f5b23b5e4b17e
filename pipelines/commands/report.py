"""`mlperf-warehouse report --round v4.1 --benchmark gpt3 [--accelerators A,B] --out DIR`."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help="render the scaling and cost report (HTML + PNG charts)")
    p.add_argument("--round", required=True, help="e.g. v4.1")
    p.add_argument("--benchmark", help="e.g. gpt3 (default: gpt3/llama if the round has it, else the most submitted)")
    p.add_argument("--accelerators", help="comma-separated accelerator keys (or parts of them), e.g. tpu,h100")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--warehouse-dir", help="default: MLPERF_WAREHOUSE_DIR or ./warehouse")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.lib.paths import published_db
    from pipelines.lib.query import connect_readonly
    from pipelines.lib.report import build_report, default_benchmark
    from pipelines.lib.rounds import normalize_round

    base = Path(args.warehouse_dir).resolve() if args.warehouse_dir else None
    round_version = normalize_round(args.round)
    accelerators = [a.strip() for a in (args.accelerators or "").split(",") if a.strip()] or None
    with connect_readonly(published_db(base)) as con:
        benchmark = args.benchmark or default_benchmark(con, round_version)
        if benchmark is None:
            raise ValueError(f"no scored results in {round_version}")
        report = build_report(con, round_version, benchmark, Path(args.out), accelerators)
    print(f"report: {report.html}")
    for name, path in report.pngs.items():
        print(f"chart:  {path}")
    for note in report.notes:
        print(f"note:   {note}")
    return 0
