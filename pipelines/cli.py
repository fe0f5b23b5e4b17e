"""The `mlperf-warehouse` command line.

Each subcommand lives in `pipelines/commands/<name>.py` and exposes `register(subparsers)`.
Light commands (query, export, status, ...) must not import dagster at module import time.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = ["refresh", "query", "prices", "report", "compare", "export", "status", "rollback", "shell"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlperf-warehouse", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"pipelines.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"pipelines.commands.{name}":
                raise
            continue  # not built yet
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear one-line error for users; tracebacks with MLPERF_DEBUG=1
        if os.environ.get("MLPERF_DEBUG"):
            raise
        from pipelines.lib.redaction import redact

        print(f"error: {redact(exc)}", file=sys.stderr)
        return 1


def entry() -> None:
    """Console-script entry point. Exits without interpreter teardown: with Dagster, pandas and
    DuckDB loaded that teardown alone takes ~0.6 s, and by now every file is closed and flushed."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
