"""One DuckDB attempt at a build: every model into a new file under `builds/`, then every SQL test.

A finished attempt with no structural failure is checkpointed with `_build_info`; one whose failures rounds
explain names those rounds (the caller, `core`, removes the file and tries again without their new data); any
other failure raises `BuildFailed`. A build file nobody finished is removed here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.lib.reference.seeds import load_seeds
from pipelines.lib.warehouse.build.inputs import largest_staged_rows, load_derived, load_raw
from pipelines.lib.warehouse.build.outcomes import BuildFailed, TestOutcome, failing_rounds, run_tests
from pipelines.lib.warehouse.models import (
    check_dependencies,
    comment_statements,
    create_macros,
    load_tests,
    model_order,
)
from pipelines.lib.warehouse.parameters import BuildParameters
from pipelines.lib.warehouse.query import quote_ident, relation_columns

ROW_GROUP_ROWS = 122_880  # DuckDB's row group: the unit of parallel scans


def row_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Exact row count of every table and view of the build, in one query (a UNION ALL of counts)."""
    names = [t for (t,) in con.execute(
        "select table_name from information_schema.tables where table_schema = 'main' order by 1").fetchall()]
    if not names:
        return {}
    query = " union all ".join(f"select {i} as i, count(*) as n from {quote_ident(t)}" for i, t in enumerate(names))
    return {names[i]: n for i, n in con.execute(query).fetchall()}


@dataclass
class Attempt:
    """One build file: its tests, and the rounds whose rows failed a structural test (None: a failure
    no round explains, which stops the publish)."""

    counts: dict[str, int]
    columns: dict[str, list[tuple[str, str]]]
    outcomes: list[TestOutcome]
    dependencies: set[str]
    failing_rounds: dict[str, str] | None
    built_at: str | None = None


def remove_build(build_path: Path) -> None:
    """A build file nobody will publish, and its WAL."""
    build_path.unlink(missing_ok=True)
    build_path.with_name(build_path.name + ".wal").unlink(missing_ok=True)


def build_attempt(base: Path, build_path: Path, models: dict, dependencies_verified: frozenset[str], fingerprint: str,
                  excluded: dict[str, str], previous: Path | None, from_previous: frozenset[str],
                  parameters: BuildParameters = BuildParameters()) -> Attempt:  # noqa: B008 (frozen)
    """Build every model into `build_path` without the staged data of the `excluded` rounds (round →
    why, recorded in `_build_info`) and run every SQL test. A finished attempt with no structural
    failure is checkpointed with `_build_info`; otherwise the caller removes the file."""
    try:
        # Written in the v1.0.0 storage format, which every DuckDB 1.x client (the duckdb-cli on PyPI,
        # BI drivers) can open; DuckDB 2.x's own format would shut them all out.
        con = duckdb.connect(str(build_path), config={"storage_compatibility_version": "v1.0.0"})
        try:
            # One checkpoint, at the end: with DuckDB's 16 MB default the WAL of the raw run events makes
            # a model in the middle of the build checkpoint too, work the final checkpoint then repeats.
            con.execute("set checkpoint_threshold = '4GB'")
            if largest_staged_rows(con, base) < ROW_GROUP_ROWS:
                # Every table fits in one row group, which one thread scans: a second one only adds
                # coordination (builds with larger tables keep every core),
                # and float sums then come out bit for bit the same in every build.
                con.execute("set threads = 1")
            load_raw(con, base, frozenset(excluded), previous, from_previous)
            load_seeds(con)
            con.execute("create table raw_build_parameters (name varchar, value double, source varchar)")
            con.executemany("insert into raw_build_parameters values (?, ?, ?)", parameters.rows())
            create_macros(con)
            load_derived(con)
            # each header names exactly what its SQL reads
            dependencies = check_dependencies(con, models, dependencies_verified)
            for name in model_order(models):
                model = models[name]
                con.execute(f"create or replace {model.kind} {name} as {model.sql}")
            columns = relation_columns(con)
            tests = load_tests(models)
            outcomes = run_tests(con, tests, columns)
            blocking = [o for o in outcomes if o.blocks]
            if blocking:
                failing = failing_rounds(con, [t for t in tests if t.name in {o.name for o in blocking}], columns,
                                         {o.name: o for o in blocking})
                if failing is None:
                    failures = [o.report() for o in blocking]
                    # The first line is what a one-line summary shows: each test with its first offending row.
                    headline = "; ".join(f.splitlines()[0] + " e.g. " + f.splitlines()[1].strip("- ") for f in failures)
                    raise BuildFailed(f"warehouse checks failed, nothing published: {headline}\n" + "\n".join(failures),
                                      outcomes)
                return Attempt({}, columns, outcomes, dependencies, failing)
            # The headers' descriptions travel with the data (BI tools show them): a COMMENT per described
            # column, hundreds, in one transaction rather than a commit (a wait for the disk) each, and sent as
            # one script (each call's own overhead is most of a COMMENT's cost). The models are built outside
            # it: a transaction holds what it writes in memory until it commits.
            con.execute("begin")
            comments = [statement for name in models for statement in comment_statements(models[name])]
            if comments:
                con.execute(";\n".join(comments))
            built_at = datetime.now(UTC).isoformat()
            con.execute(
                "create table _build_info as select ?::varchar as built_at, ?::varchar as fingerprint, "
                "?::varchar as excluded_rounds",
                [built_at, fingerprint, json.dumps(excluded)],
            )
            con.execute("commit")
            counts = row_counts(con)
            con.execute("checkpoint")
        finally:
            con.close()
    except BaseException:
        remove_build(build_path)
        raise
    return Attempt(counts, columns, outcomes, dependencies, {}, built_at)
