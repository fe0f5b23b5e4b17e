"""The `mlperf-warehouse` command line.

Each subcommand lives in `pipelines/commands/<name>.py` and exposes `register(subparsers)`.
Light commands (query, export, status, ...) must not import dagster at module import time.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys

COMMANDS = ["refresh", "query", "prices", "report", "compare", "export", "status", "rollback", "shell", "site", "ui"]

EXAMPLES = """first hour:
  mlperf-warehouse refresh --rounds v4.1,v5.0 --no-prices   # download, parse, build, publish
  mlperf-warehouse status                                    # what is published
  mlperf-warehouse query "select * from fct_training_result where benchmark = 'gpt3'"
  mlperf-warehouse report --round v4.1 --benchmark gpt3 --out report/
  mlperf-warehouse prices --accelerator h100

`mlperf-warehouse COMMAND --help` shows each command's options and examples.
Environment: MLPERF_WAREHOUSE_DIR (where the warehouse lives), MLPERF_RESULTS_URL_TEMPLATE (a mirror
of the results archives), MLPERF_ROUNDS, MLPERF_DEBUG=1 (tracebacks)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse that suggests the closest valid choice for a typo (`refesh` → `refresh`)."""

    def error(self, message: str):
        invalid = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if invalid:
            wrong, choices = invalid.group(1), re.findall(r"'([^']*)'", invalid.group(2))
            close = difflib.get_close_matches(wrong, choices, n=1, cutoff=0.5)
            argument = re.match(r"argument ([^:]+):", message)
            name = argument.group(1) if argument else "value"
            message = f"unknown {'command' if name == 'COMMAND' else name} {wrong!r}" + (
                f"; did you mean {close[0]!r}?" if close else "") + f" (valid: {', '.join(choices)})"
        super().error(message)


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        own = package_version("mlperf-warehouse")
    except PackageNotFoundError:
        own = "unknown (not installed)"
    import duckdb

    return f"mlperf-warehouse {own} (duckdb {duckdb.__version__}, python {sys.version.split()[0]})"


class _Version(argparse.Action):
    """--version, computed only when asked (it imports duckdb)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="mlperf-warehouse", epilog=EXAMPLES,
                            description="MLPerf Training results and cloud accelerator prices as a DuckDB warehouse.",
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=ArgumentParser)
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
    from pipelines.commands import UsageError

    args = build_parser().parse_args(argv)
    args.settings = None
    try:
        # The operator's settings, read once: the environment, then the command's --warehouse-dir.
        from pipelines.settings import apply, load_settings

        args.settings = apply(load_settings(warehouse_dir=getattr(args, "warehouse_dir", None)))
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `... | head`: the reader has all it wants
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except UsageError as exc:  # a value that does not exist: exit 2 like argparse, with the valid ones
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a clear one-line error for users; tracebacks with MLPERF_DEBUG=1
        if args.settings is not None and args.settings.debug:
            raise
        from pipelines.lib.io.redaction import redact

        print(f"error: {redact(_without_class_name(exc))}", file=sys.stderr)
        return 1


def _without_class_name(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return re.sub(r"^(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*(?:Error|Exception): ", "", text)


def entry() -> None:
    """Console-script entry point. Exits without interpreter teardown: with Dagster, pandas and
    DuckDB loaded, tearing their modules down is slow and buys nothing, as by now every file is closed and
    flushed."""
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
