"""`mlperf-warehouse shell [--python]`: an interactive, read-only session on the published warehouse."""

from __future__ import annotations

import argparse
import sys

from pipelines.commands import add_allow_external_access, add_warehouse_dir, warehouse_base

EXAMPLES = """examples:
  mlperf-warehouse shell
  mlperf-warehouse shell --python
  mlperf-warehouse shell --allow-external-access   # to COPY results out to a file, read a CSV, INSTALL ...

The session is read-only and sandboxed: no file read or written outside the warehouse, no INSTALL or
LOAD, no network, and the configuration locked (the duckdb CLI runs in -safe mode). It may use
MLPERF_QUERY_MEMORY_BYTES of memory (2 GiB), every allocation counted: a statement that needs more fails
with DuckDB's "Out of Memory Error"."""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "shell", help="open the duckdb CLI (or a Python REPL) read-only on the warehouse",
        description="An interactive session on the published warehouse: the duckdb CLI when it is installed and can "
        "open the file (pip install duckdb-cli), else a Python REPL with a DuckDB connection `con`.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--python", action="store_true", help="Python REPL even when the duckdb CLI is installed")
    add_allow_external_access(p)
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def duckdb_cli() -> str | None:
    """The duckdb CLI binary: the one the `duckdb-cli` package bundles (its `duckdb` script is a
    wrapper whose start-up commands -safe mode would refuse), else the first `duckdb` on PATH."""
    import importlib.util
    import shutil
    from pathlib import Path

    spec = importlib.util.find_spec("duckdb_cli")
    if spec and spec.origin:
        bundled = Path(spec.origin).with_name("duckdb")
        if bundled.is_file():
            return str(bundled)
    return shutil.which("duckdb") or shutil.which("duckdb", path=str(Path(sys.executable).parent))


def cli_command(cli: str, path, allow_external_access: bool) -> list[str]:
    # -readonly: a refresh can publish meanwhile; this session keeps the file it opened.
    # -safe: external access off and the configuration locked, dot commands that touch files refused.
    return [cli, "-readonly", *([] if allow_external_access else ["-safe"]), str(path)]


def cli_own_bytes() -> int:
    """The duckdb CLI's own data memory once started, on top of which the session's limit goes: about 14 MiB
    (measured, 1.5) and one thread stack per core (DuckDB starts a thread per core; a stack is writable private
    memory, which RLIMIT_DATA counts), with room to spare."""
    import os
    import resource

    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    stack = stack if 0 < stack < (1 << 30) else 8 << 20
    return (32 << 20) + (os.cpu_count() or 1) * stack


def run(args: argparse.Namespace) -> int:
    import subprocess

    from pipelines.lib.io.limits import limit
    from pipelines.lib.io.paths import published_db
    from pipelines.lib.warehouse.query import WarehouseMissing, limit_child_memory, published_build_file
    from pipelines.lib.warehouse.team import team_catalog

    catalog = team_catalog()
    if catalog is not None:  # the team catalog is no file the duckdb CLI opens: DuckDB in Python, on the lake
        return _python_repl(None, args.allow_external_access, f"the team catalog {catalog.shown}")
    path = published_db(warehouse_base(args))
    if not path.exists():
        raise WarehouseMissing(f"no published warehouse at {path}; run `mlperf-warehouse refresh` first")
    path = published_build_file(path)
    cli = None if args.python else duckdb_cli()
    if cli:
        command = cli_command(cli, path, args.allow_external_access)
        probe = subprocess.run(command[:-1] + ["-c", "select 1", str(path)], capture_output=True, text=True)
        if probe.returncode == 0:
            # -safe locks DuckDB's configuration before a memory_limit could be set: the process limit bounds it
            return subprocess.call(command, preexec_fn=limit_child_memory(limit("query_memory_bytes"), cli_own_bytes()))
        reason = next((line for line in (probe.stderr + probe.stdout).splitlines() if line.strip()), "no reason given")
        print(f"the duckdb CLI ({cli}) cannot open {path.name}: {reason.strip()}\n"
              "opening a Python REPL instead", file=sys.stderr)
    return _python_repl(path, args.allow_external_access)


def _python_repl(path, allow_external_access: bool, what: str | None = None) -> int:
    """A Python REPL with a read-only, sandboxed connection on the file `path` (None: on the team catalog)."""
    import code

    import duckdb
    import polars as pl

    from pipelines.lib.io.limits import limit
    from pipelines.lib.warehouse.query import connect_published, connect_readonly, memory_bound

    memory = limit("query_memory_bytes")
    connection = connect_readonly(path, sandbox=not allow_external_access, memory_bytes=memory) if path else \
        connect_published(sandbox=not allow_external_access, memory_bytes=memory)
    with connection as con, memory_bound(memory):
        banner = (f"read-only DuckDB connection `con` on {what or path}; polars as `pl`.\n"
                  'e.g. con.sql("select * from fct_training_result limit 5").pl()')
        code.interact(banner=banner, local={"con": con, "duckdb": duckdb, "pl": pl}, exitmsg="")
    return 0
