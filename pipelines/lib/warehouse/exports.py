"""Export the published warehouse's public tables (dim_, fct_, mart_; views too) for BI tools.

Everything is read through one read-only connection, so a publish that happens mid-export cannot
mix two builds: the connection keeps reading the file it opened. Table names come from the
catalog, never from user text pasted into SQL.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.lib.io.files import owned_directory
from pipelines.lib.io.jsonsafe import dumps_strict
from pipelines.lib.io.paths import builds_dir, warehouse_dir
from pipelines.lib.io.text import FORMULA_START
from pipelines.lib.mlperf.rounds import round_sort_key
from pipelines.lib.warehouse.models import PUBLIC_PREFIXES
from pipelines.lib.warehouse.query import connect_published, quote_ident, quote_literal, relation_columns

# Written into every export directory: only a directory holding it is ever replaced.
EXPORT_MARKER = ".mlperf-warehouse-export"
FORMATS = ("parquet", "csv", "mlcommons-summary")  # the last: summary_results.json, MLCommons' results table


def public_tables(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Public table/view name → 'table' or 'view', from the catalog."""
    rows = con.execute(
        "select table_name, table_type from information_schema.tables where table_schema = 'main' "
        "and table_catalog = current_database() order by 1"
    ).fetchall()
    return {n: ("view" if t == "VIEW" else "table") for n, t in rows if n.startswith(PUBLIC_PREFIXES)}


def _check_out_dir(out: Path, base: Path) -> None:
    builds = builds_dir(base).resolve()
    if out == base or out == builds or builds in out.parents:
        raise ValueError(f"refusing to export into {out}: builds/ and the warehouse directory hold published builds")


def _legacy_export(base: Path):
    """Exports written before the marker existed: recognised only in the warehouse's own exports/ folder
    (a manifest.json alone could be anybody's)."""
    return lambda out: (out / "manifest.json").is_file() and (base / "exports") in out.parents


def _csv_select(table: str, cols: list[dict]) -> str:
    """The table for a CSV file: text cells a spreadsheet would read as a formula (lib.io.text.FORMULA_START)
    get a leading apostrophe; everything else as it is. (One regular expression per column: a CASE over an
    IN list costs DuckDB ~3 ms per text column and query, a round's query of a wide table 0.1 s.)"""
    first = quote_literal("^([" + "".join(f"\\x{{{ord(c):02x}}}" for c in FORMULA_START) + "])")
    prefixed = quote_literal("'\\1")
    items = []
    for c in cols:
        name = quote_ident(c["name"])
        items.append(f"regexp_replace({name}, {first}, {prefixed}) as {name}" if c["type"] == "VARCHAR" else name)
    return f"select {', '.join(items)} from {quote_ident(table)}"


# Every file's rows in one order, so two exports of one build are the same bytes (a parallel scan's order is
# not): by every column, so rows tie only where they are identical. A table with a round column is sorted one
# round at a time, which keeps the sort's memory to one round's rows.
IN_ORDER = "order by all"


def _by_round(cols: list[dict]) -> bool:
    return any(c["name"] == "round" for c in cols)


def _rounds(con, table: str) -> list[str | None]:
    """The table's rounds in round order ('v10.0' after 'v9.1'; a row without a round last)."""
    found = [r for (r,) in con.execute(f"select distinct round from {quote_ident(table)}").fetchall()]
    return sorted(found, key=lambda r: (r is None, round_sort_key(r) if r is not None else (0, 0)))


def _of_round(round_version: str | None) -> str:
    return "where round is null" if round_version is None else f"where round = {quote_literal(round_version)}"


def _export_csv(con, table: str, cols: list[dict], tmp: Path) -> str:
    """One CSV file; a table with rounds written a round at a time and joined (the header once)."""
    path = tmp / f"{table}.csv"
    select = _csv_select(table, cols)
    rounds = _rounds(con, table) if _by_round(cols) else []
    if not rounds:
        con.execute(f"copy ({select} {IN_ORDER}) to {quote_literal(str(path))} (format csv, header true)")
        return path.name
    with open(path, "wb") as out:
        for i, round_version in enumerate(rounds):
            part = tmp / f".{table}.part.csv"
            con.execute(f"copy ({select} {_of_round(round_version)} {IN_ORDER}) to {quote_literal(str(part))} "
                        f"(format csv, header {'true' if i == 0 else 'false'})")
            with open(part, "rb") as rows:
                shutil.copyfileobj(rows, out)
            part.unlink()
    return path.name


def _export_table(con, table: str, cols: list[dict], fmt: str, tmp: Path) -> tuple[str, list[str]]:
    if fmt == "csv":
        return _export_csv(con, table, cols, tmp), []
    source = f"select * from {quote_ident(table)}"
    if _by_round(cols):
        # Hive layout table/round=v5.0/*.parquet so engines prune rounds by folder; the files keep
        # the round column too, for tools that read a folder of files without hive support. One
        # COPY per round: DuckDB's PARTITION_BY buffers every partition at once (~0.8 GB for the
        # event table of six rounds), one round at a time stays small.
        target = tmp / table
        target.mkdir()
        rounds = _rounds(con, table)
        if not rounds:  # an empty table still gets a file, with its columns
            con.execute(f"copy ({source} {IN_ORDER}) to {quote_literal(str(target / 'data_0.parquet'))} "
                        "(format parquet)")
        for round_version in rounds:
            folder = target / f"round={round_version if round_version is not None else '__HIVE_DEFAULT_PARTITION__'}"
            folder.mkdir()
            con.execute(f"copy ({source} {_of_round(round_version)} {IN_ORDER}) to "
                        f"{quote_literal(str(folder / 'data_0.parquet'))} (format parquet)")
        return f"{table}/**/*.parquet", ["round"]
    path = f"{table}.parquet"
    con.execute(f"copy ({source} {IN_ORDER}) to {quote_literal(str(tmp / path))} (format parquet)")
    return path, []


def export(out: Path, fmt: str = "parquet", tables: list[str] | None = None, base: Path | None = None) -> dict:
    """Write the tables and manifest.json into `out` (replaced as a whole); returns the manifest."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    base = (base or warehouse_dir()).resolve()
    out = Path(out).resolve()
    _check_out_dir(out, base)
    with owned_directory(out, EXPORT_MARKER, "export", _legacy_export(base)) as tmp:
        with connect_published(base) as con:
            available = public_tables(con)
            wanted = tables or list(available)
            unknown = sorted(set(wanted) - set(available))
            if unknown:
                raise ValueError(f"unknown table(s) {', '.join(unknown)}; public tables: {', '.join(available)}")
            built_at, fingerprint = con.execute("select built_at, fingerprint from _build_info").fetchone()
            manifest = {"format": fmt, "built_at": built_at, "fingerprint": fingerprint,
                        "exported_at": datetime.now(UTC).isoformat(), "tables": []}
            if fmt == "mlcommons-summary":
                from pipelines.lib.warehouse.mlcommons_summary import SUMMARY_FILE, summary_records

                records = summary_records(con)
                (tmp / SUMMARY_FILE).write_text(dumps_strict(records, indent=1, ensure_ascii=False) + "\n")
                manifest["tables"].append({"name": "mlcommons_summary", "kind": "file", "rows": len(records),
                                           "path": SUMMARY_FILE, "partitioned_by": [], "columns": []})
                wanted = []
            columns_of = relation_columns(con) if wanted else {}
            for table in wanted:
                cols = [{"name": name, "type": data_type} for name, data_type in columns_of[table]]
                path, partitioned_by = _export_table(con, table, cols, fmt, tmp)
                rows = con.execute(f"select count(*) from {quote_ident(table)}").fetchone()[0]
                manifest["tables"].append({"name": table, "kind": available[table], "rows": rows, "path": path,
                                           "partitioned_by": partitioned_by, "columns": cols})
        (tmp / "manifest.json").write_text(dumps_strict(manifest, indent=2) + "\n")
    return manifest

