"""`mlperf-warehouse query "SQL"`: read-only, sandboxed SQL on the published warehouse."""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import signal
import sys
import threading
from decimal import Decimal

from pipelines.commands import add_allow_external_access, add_warehouse_dir, limit_flag, warehouse_base, whole_flag
from pipelines.lib.io.text import neutralised, visible

DEFAULT_LIMIT = 50
MAX_ROWS = 10**12  # --limit: more rows than any result holds
EXAMPLES = """examples:
  mlperf-warehouse query "select round, count(*) from fct_training_result group by 1 order by 1"
  mlperf-warehouse query "select * from mart_scaling_efficiency where benchmark = 'gpt3'" --limit 0
  mlperf-warehouse query "select * from fct_cloud_price_current" --format csv > prices.csv
  mlperf-warehouse query "copy dim_system to 'systems.parquet'" --allow-external-access

`table` shows numbers at a readable precision and at most --limit rows; csv and json give every row
at full precision (csv cells that would start a spreadsheet formula, =, +, -, @, get a leading
apostrophe). The SQL runs read-only and sandboxed: no file read or written outside the warehouse, no
INSTALL/LOAD, no network, unless --allow-external-access; it is stopped after --timeout seconds (60) or
at Ctrl-C, and may use --memory-limit bytes (2 GiB)."""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "query", help="run SQL read-only on the published warehouse",
        description="Run one SQL statement on the published warehouse (read-only) and print the result.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sql", help="the SQL statement, e.g. \"select * from dim_accelerator\"")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table",
                   help="table (default: rounded, at most --limit rows), csv or json (every row, full precision)")
    p.add_argument("--limit", type=whole_flag(0, MAX_ROWS), default=None, metavar="N",
                   help=f"rows shown in table format (default {DEFAULT_LIMIT}; 0 = all); with csv/json: no limit unless given")
    p.add_argument("--timeout", type=limit_flag("query_timeout_seconds"), default=None, metavar="SECONDS",
                   help="stop the statement after this many seconds (default: MLPERF_QUERY_TIMEOUT_SECONDS, else 60)")
    p.add_argument("--memory-limit", type=limit_flag("query_memory_bytes"), default=None, metavar="BYTES",
                   help="memory the statement may use, every allocation counted, e.g. 4e9 (default: "
                        "MLPERF_QUERY_MEMORY_BYTES, else 2 GiB)")
    add_allow_external_access(p)
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:

    import duckdb

    from pipelines.lib.io.limits import limit as setting
    from pipelines.lib.warehouse.query import connect_published, memory_bound

    limit = args.limit if args.limit is not None else (DEFAULT_LIMIT if args.format == "table" else 0)
    timeout = args.timeout if args.timeout is not None else setting("query_timeout_seconds")
    memory = int(args.memory_limit) if args.memory_limit is not None else setting("query_memory_bytes")
    base = warehouse_base(args)
    # DuckDB's memory_limit stops what its buffer manager tracks, gracefully; the process limit stops the rest
    # (strings, lists), so the bound holds for every allocation of the statement and of its fetched rows.
    with connect_published(base, sandbox=not args.allow_external_access, memory_bytes=memory) as con, \
            memory_bound(memory), _bounded(con, timeout) as stopped:
        try:
            cursor = con.execute(args.sql)
            columns = [d[0] for d in cursor.description or []]
            rows, total = _first_rows(cursor, limit)
        except duckdb.CatalogException as exc:
            return _unknown_name(con, exc)
        except duckdb.PermissionException as exc:
            print(f"error: {str(exc).splitlines()[0]}\n"
                  "query runs sandboxed (no files outside the warehouse, no INSTALL/LOAD, no network); "
                  "--allow-external-access lifts that", file=sys.stderr)
            return 2
        except duckdb.InterruptException:
            if stopped["why"] == "ctrl-c":
                print("query interrupted (Ctrl-C)", file=sys.stderr)
                return 130
            print(f"error: the query was stopped after {timeout:g} s (--timeout SECONDS or "
                  "MLPERF_QUERY_TIMEOUT_SECONDS allow more)", file=sys.stderr)
            return 1
        except (duckdb.OutOfMemoryException, MemoryError):
            print(f"error: the query needs more than {memory / (1 << 30):.3g} GiB of memory (--memory-limit BYTES or "
                  "MLPERF_QUERY_MEMORY_BYTES allow more)", file=sys.stderr)
            return 1
    if args.format == "csv":  # for spreadsheets too: no cell is read as a formula (lib.io.text)
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows([neutralised(v) for v in row] for row in rows)
    elif args.format == "json":  # strict JSON: NaN and ±Infinity are null (lib.io.jsonsafe)
        from pipelines.lib.io.jsonsafe import dumps_strict

        print(dumps_strict([dict(zip(columns, r, strict=False)) for r in rows], indent=1))
    else:
        print(render_table(columns, rows, total=total))
    if total > len(rows) and args.format != "table":
        print(f"note: {len(rows):,} of {total:,} rows written (--limit {limit})", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _bounded(con, seconds: float):
    """While the block runs, the statement is interrupted after `seconds` or at Ctrl-C (DuckDB itself
    does not stop at a signal); yields a dict whose "why" says which ("timeout", "ctrl-c")."""
    stopped: dict = {"why": None}

    def stop(why: str) -> None:
        stopped["why"] = stopped["why"] or why
        con.interrupt()

    timer = threading.Timer(seconds, stop, ["timeout"])
    timer.daemon = True
    timer.start()
    previous = signal.signal(signal.SIGINT, lambda *_: stop("ctrl-c")) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        yield stopped
    finally:
        timer.cancel()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _first_rows(cursor, limit: int) -> tuple[list[tuple], int]:
    """The result's first `limit` rows (every row when 0) and how many rows it has. The rows are read as Arrow
    batches and only the shown ones become Python values (through DuckDB, as `fetchall` would give them), so
    counting a million events stays cheap. (Counting what `fetchmany` left is not possible on DuckDB 1.5: its
    Arrow reader skips the rest of the chunk `fetchmany` read from.)"""
    import warnings

    import duckdb
    import pyarrow as pa

    if limit <= 0 or not cursor.description:
        rows = cursor.fetchall() if cursor.description else []
        return rows, len(rows)
    kept, total = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "an extra copy of the rows": only the shown ones are kept
        reader = cursor.to_arrow_reader(100_000)
        for batch in reader:
            if total < limit:
                kept.append(batch.slice(0, limit - total))
            total += batch.num_rows
    shown = duckdb.connect()
    try:
        return shown.from_arrow(pa.Table.from_batches(kept, schema=reader.schema)).fetchall(), total
    finally:
        shown.close()


def _unknown_name(con, exc) -> int:
    """A table (or column, function) that does not exist: name the tables there are."""
    tables = [t for (t,) in con.execute(
        "select table_name from information_schema.tables where table_schema = 'main' and table_catalog = current_database() "
        "and table_name not like 'raw\\_%' escape '\\' and table_name not like '\\_%' escape '\\' order by 1"
    ).fetchall()]
    print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
    if "Table" in str(exc):
        print("tables: " + ", ".join(tables), file=sys.stderr)
    return 2


def format_cell(value, max_width: int = 60) -> str:
    """A cell as shown in `table` format: NULL, numbers at four significant digits (whole numbers
    in full), text cut at `max_width` with an ellipsis."""
    if value is None:
        text = "NULL"
    elif isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, (float, Decimal)):
        text = _number(float(value))
    else:
        text = visible(str(value))  # no control character reaches the terminal (newlines become spaces)
    return text if len(text) <= max_width else text[: max_width - 1] + "…"


def _number(v: float) -> str:
    if not math.isfinite(v):
        return str(v)
    if v == 0 or v == int(v) and abs(v) < 1e15:
        return f"{v:.0f}"
    magnitude = math.floor(math.log10(abs(v)))
    if magnitude < -4 or magnitude >= 15:
        return f"{v:.3e}"
    return f"{v:.{max(0, 3 - magnitude)}f}"


def _numeric(value) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def render_table(columns: list[str], rows: list[tuple], max_width: int = 60, total: int | None = None) -> str:
    columns = [visible(c) for c in columns]
    cells = [[format_cell(v, max_width) for v in row] for row in rows]
    right = [bool(rows) and all(_numeric(r[i]) or r[i] is None for r in rows) for i in range(len(columns))]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]

    def line(values):
        return "  ".join(v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=False)).rstrip()

    out = [line(columns), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    total = len(rows) if total is None else total
    if total > len(rows):
        out.append(f"({len(rows):,} of {total:,} rows shown; --limit N shows more, --limit 0 all, "
                   "--format csv gives every row)")
    else:
        out.append(f"({total:,} row{'s' if total != 1 else ''})")
    return "\n".join(out)
