"""What a build reads: the staged files as `raw_<table>` (less the rounds left out, plus the rows a round keeps
from the previously published build), the raw tables computed in Python, and the fingerprint of all of it.

The fingerprint changes whenever a staged file, a SQL model, a seed, the accelerator mapping or an assumption
changes: equal to the published build's, the build is skipped (`core`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

from pipelines.lib.io.files import file_stamp
from pipelines.lib.io.package_data import package_path
from pipelines.lib.io.paths import warehouse_dir
from pipelines.lib.mlperf.suites import RoundKey
from pipelines.lib.mlperf.training_rename import renamed_from
from pipelines.lib.reference import accelerators
from pipelines.lib.reference.accelerators import ALIASES_CSV
from pipelines.lib.reference.seeds import SEED_TABLES
from pipelines.lib.staging.files import staged_files
from pipelines.lib.warehouse.parameters import BuildParameters
from pipelines.lib.warehouse.query import quote_ident, quote_literal
from pipelines.lib.warehouse.raw_tables import RAW_TABLES, ROUND_FILES, empty

SQL_DIR = package_path("sql")
# The Python-side mapping of systems to accelerators: a change to it rebuilds the warehouse.
_MAPPING_FILES = [ALIASES_CSV, Path(accelerators.__file__)]


def input_fingerprint(base: Path | None = None, parameters: BuildParameters | None = None) -> str:
    """Changes whenever a staged file, a SQL model, a seed, the accelerator mapping or an assumption changes."""
    base = base or warehouse_dir()
    digest = hashlib.sha256((parameters or BuildParameters()).fingerprint().encode())
    for table in sorted(RAW_TABLES):
        for path in staged_files(table, base):
            digest.update(file_stamp(path, base).encode())
    for path in sorted([*SQL_DIR.rglob("*.sql"), *SEED_TABLES.values(), *_MAPPING_FILES]):
        digest.update(path.read_bytes())
    return digest.hexdigest()


# Raw tables staged one file per round (`<prefix><round>.parquet`): the column naming the round, the prefix.


def _round_of_file(table: str, path: Path) -> str | None:
    """The round key (`v4.1`, `hpc:v3.0`) of a staged file, None for a file of no round."""
    for files in ROUND_FILES.get(table, ()):
        if path.stem.startswith(files.file_prefix):
            return files.key(path.stem[len(files.file_prefix):])
    return None


def load_raw(con: duckdb.DuckDBPyConnection, base: Path | None, excluded: frozenset[str] = frozenset(),
             previous: Path | None = None, from_previous: frozenset[str] = frozenset()) -> None:
    """Every staged table as `raw_<table>`. The staged files of `excluded` rounds are left out; the
    rows of the `from_previous` rounds come from the published build `previous` instead."""
    for table in sorted(RAW_TABLES):
        files = [str(p) for p in staged_files(table, base) if _round_of_file(table, p) not in excluded]
        name = f"raw_{table}"
        if files:
            con.execute(f"create table {name} as select * from read_parquet($files, union_by_name = true)", {"files": files})
        else:  # no data staged yet: an empty table with the right columns
            con.register("empty_raw", empty(table))
            con.execute(f"create table {name} as select * from empty_raw")
            con.unregister("empty_raw")
    if previous is not None and from_previous:
        _copy_previous_rounds(con, previous, sorted(from_previous))


def _copy_previous_rounds(con: duckdb.DuckDBPyConnection, previous: Path, rounds: list[str]) -> None:
    """The raw rows of `rounds` (round keys: `v4.1`, `hpc:v3.0`) as the published build `previous` holds
    them (the columns both builds have; a column new since then is NULL for them)."""
    # a literal, not a parameter: DuckDB 1.5's ATTACH takes no prepared parameter
    con.execute(f"attach {quote_literal(str(previous))} as previous_build (read_only)")
    try:
        tables = {t for (t,) in con.execute(
            "select table_name from information_schema.tables where table_catalog = 'previous_build'").fetchall()}
        for table, files_of_suites in ROUND_FILES.items():
            name = f"raw_{table}"
            # a build published before Training's names said Training holds its tables as raw_mlperf_*
            theirs_name = next((n for n in (name, f"raw_{renamed_from(table)}") if n in tables), None)
            if theirs_name is None:
                continue
            mine = [c for (c,) in con.execute(
                "select column_name from information_schema.columns where table_catalog = current_database() "
                "and table_name = ?", [name]).fetchall()]
            theirs = {c for (c,) in con.execute(
                "select column_name from information_schema.columns where table_catalog = 'previous_build' "
                "and table_name = ?", [theirs_name]).fetchall()}
            shared = ", ".join(quote_ident(c) for c in mine if c in theirs)
            for files in files_of_suites:
                of_suite = [k.version for k in map(RoundKey.parse, rounds) if k.suite is files.suite]
                if not of_suite:
                    continue
                only_source = f" and source = '{files.source}'" if files.source else ""
                con.execute(f"insert into {name} ({shared}) select {shared} from previous_build.{theirs_name} "
                            f"where {quote_ident(files.column)} in (select unnest($rounds)){only_source}",
                            {"rounds": of_suite})
    finally:
        con.execute("detach previous_build")


def largest_staged_rows(con: duckdb.DuckDBPyConnection, base: Path | None) -> int:
    """Rows of the largest staged table, from the Parquet footers (no data read)."""
    largest = 0
    for table in RAW_TABLES:
        files = [str(p) for p in staged_files(table, base)]
        if files:
            [(rows,)] = con.execute("select coalesce(sum(num_rows), 0) from parquet_file_metadata($files)",
                                    {"files": files}).fetchall()
            largest = max(largest, rows)
    return largest


def load_derived(con: duckdb.DuckDBPyConnection) -> None:
    """Raw tables computed in Python from other raw tables (one implementation of each mapping)."""
    from pipelines.lib.reference.accelerators import default_matcher

    matcher = default_matcher()
    names = con.execute(
        "select accelerator_model_name, system_name from raw_training_systems "
        "union select accelerator_model_name, system_name from raw_hpc_systems "
        "union select accelerator_model_name, system_name from raw_inference_systems"
    ).fetchall()
    rows = [
        (name, system_name, matcher.mlperf(name, system_name), matcher.is_deliberately_unmapped(name, system_name))
        for name, system_name in names
    ]
    con.execute(
        "create table raw_mlperf_accelerator_map (accelerator_model_name varchar, system_name varchar, "
        "accelerator varchar, deliberately_unmapped boolean)"
    )
    if rows:  # one statement (executemany costs a statement per row)
        con.execute("insert into raw_mlperf_accelerator_map select unnest($a), unnest($b), unnest($c), unnest($d)",
                    dict(zip("abcd", map(list, zip(*rows, strict=False)), strict=True)))

