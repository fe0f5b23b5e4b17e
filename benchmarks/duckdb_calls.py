"""What single DuckDB calls cost the build, the export, the report and the refresh summary, measured on a small
real build (two staged rounds of two systems, `tests/support/mini_warehouse.py`), in this process's CPU seconds:
one call's own overhead (`select 1`), the build's column comments sent one call each against one script (both
in one transaction, as the build sends them), a read of every table's columns from the information schema once
against once per table, and opening the published file read-only.

Usage: python benchmarks/duckdb_calls.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from pipelines.lib.warehouse.models import comment_statements, load_models  # noqa: E402
from pipelines.lib.warehouse.query import published_build_file, relation_columns  # noqa: E402
from support.mini_warehouse import build_warehouse  # noqa: E402


def cpu(work) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def comments(path: Path, statements: list[str], as_script: bool) -> float:
    con = duckdb.connect(str(path))
    try:
        def send():
            con.execute("begin")
            if as_script:
                con.execute(";\n".join(statements))
            else:
                for statement in statements:
                    con.execute(statement)
            con.execute("commit")
        return cpu(send)
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    models = load_models()
    statements = [s for name in models for s in comment_statements(models[name])]
    with tempfile.TemporaryDirectory(prefix="duckdb-calls-") as scratch:
        base = Path(scratch) / "warehouse"
        base.mkdir()
        build_warehouse(base)
        published = published_build_file(base / "mlperf.duckdb")
        copy = Path(scratch) / "copy.duckdb"
        rows = []

        memory = duckdb.connect()
        one = [cpu(lambda: [memory.execute("select 1") for _ in range(500)]) / 500 for _ in range(args.repeat)]
        rows.append(("one call (`select 1`)", statistics.median(one) * 1000, "ms a call"))

        for as_script in (False, True):
            runs = []
            for _ in range(args.repeat):
                shutil.copyfile(published, copy)
                runs.append(comments(copy, statements, as_script))
            label = f"{len(statements)} column comments, " + ("one script" if as_script else "one call each")
            rows.append((label, statistics.median(runs) * 1000, "ms in all"))

        con = duckdb.connect(str(published), read_only=True)
        tables = list(relation_columns(con))
        per_table = [cpu(lambda: [con.execute(
            "select column_name, data_type from information_schema.columns where table_schema = 'main' and "
            "table_catalog = current_database() and table_name = ? order by ordinal_position", [t]).fetchall()
            for t in tables]) for _ in range(args.repeat)]
        once = [cpu(lambda: relation_columns(con)) for _ in range(args.repeat)]
        con.close()
        rows.append((f"columns of {len(tables)} relations, one information-schema query each",
                     statistics.median(per_table) * 1000, "ms in all"))
        rows.append((f"columns of {len(tables)} relations, one query (`relation_columns`)",
                     statistics.median(once) * 1000, "ms in all"))

        opens = [cpu(lambda: duckdb.connect(str(published), read_only=True).close()) for _ in range(args.repeat * 4)]
        rows.append((f"open the published file read-only ({published.stat().st_size // 2**20} MiB) and close it",
                     statistics.median(opens) * 1000, "ms an open"))
    print(f"CPU, median of {args.repeat} runs (the open: of {args.repeat * 4}); DuckDB {duckdb.__version__}")
    for label, value, unit in rows:
        print(f"{value:9.2f} {unit:10s} {label}")


if __name__ == "__main__":
    main()
