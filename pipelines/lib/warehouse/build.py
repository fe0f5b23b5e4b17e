"""Build the DuckDB warehouse from staged files and publish it atomically.

A build goes into its own file under `builds/`; the SQL models run there, then the SQL tests; only
if every test passes is the build checkpointed and hard-linked into place as `mlperf.duckdb`
(`os.replace`, atomic). Readers holding the old file keep reading it; nobody ever opens the
published file for writing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.lib.io.files import atomic_write, file_stamp
from pipelines.lib.io.package_data import package_path
from pipelines.lib.io.paths import (
    builds_dir,
    ensure_inside,
    published_db,
    warehouse_dir,
)
from pipelines.lib.mlperf.suites import HPC, INFERENCE, TRAINING, Suite
from pipelines.lib.reference import accelerators
from pipelines.lib.reference.accelerators import ALIASES_CSV
from pipelines.lib.reference.seeds import SEED_TABLES, load_seeds
from pipelines.lib.staging.files import staged_files
from pipelines.lib.warehouse.models import (
    SqlTest,
    check_dependencies,
    comment_statements,
    create_macros,
    grain_test_sql,
    load_models,
    load_tests,
    model_order,
    quote_identifier,
)
from pipelines.lib.warehouse.parameters import BuildParameters
from pipelines.lib.warehouse.publish import (
    file_signature,
    finished_build_error,
    list_builds,
    prune_builds,
    publish,
    read_published_info,
    write_published_info,
)
from pipelines.lib.warehouse.query import quote_literal
from pipelines.lib.warehouse.raw_tables import RAW_TABLES, ROUND_FILES, empty, split_round_key


def suite_of_model(model: str) -> Suite:
    """The suite whose rounds a model's rows are: `<layer>_hpc_*` HPC, `<layer>_inference_*` Inference,
    everything else Training (a test of an HPC model names HPC rounds, never the Training round of that name)."""
    _layer, _, rest = model.partition("_")
    for suite in (HPC, INFERENCE):
        if rest.startswith(f"{suite.name}_"):
            return suite
    return TRAINING

SQL_DIR = package_path("sql")
# The Python-side mapping of systems to accelerators: a change to it rebuilds the warehouse.
_MAPPING_FILES = [ALIASES_CSV, Path(accelerators.__file__)]
# What earlier builds of this warehouse proved, so a build need not prove it again (see _read_verified).
VERIFIED_INFO = "verified.json"
KEEP_BUILDS = 5


@dataclass(frozen=True)
class ModelStats:
    """What one model holds in a finished build: rows and (column name, DuckDB type) in order."""

    rows: int
    columns: list[tuple[str, str]]


@dataclass(frozen=True)
class TestOutcome:
    """One SQL test (a file of sql/tests or a generated grain test) on the model it tests."""

    name: str
    model: str
    description: str
    passed: bool
    offending: list[dict] = field(default_factory=list)  # at most SHOWN_ROWS, each with its source
    more: bool = False  # more offending rows than shown
    generated: bool = False
    severity: str = "structural"  # see models.SEVERITIES

    @property
    def blocks(self) -> bool:
        """A failed structural test: its rounds are left out of the build (or, with no round, the publish stops)."""
        return not self.passed and self.severity == "structural"

    def summary(self) -> str:
        """One line: how many rows, and the first of them (without its source)."""
        count = f"{'more than ' if self.more else ''}{len(self.offending)} row(s)"
        first = ", ".join(str(v) for k, v in (self.offending[0] if self.offending else {}).items()
                          if k != "_source" and v is not None)
        return f"{count}: {first}" + ("; ..." if len(self.offending) > 1 else "")

    def report(self) -> str:
        """The test's failure as text: a count line, then each shown row and where it came from."""
        lines = [f"{self.name}: {'more than ' if self.more else ''}{len(self.offending)} offending row(s)"]
        for record in self.offending:
            shown = ", ".join(f"{k}={v!r}" for k, v in record.items() if k != "_source")
            lines.append(f"  - {shown}  [source: {record['_source']}]")
        return "\n".join(lines)


class BuildFailed(Exception):
    """SQL tests failed; nothing was published. `outcomes` holds every test's result."""

    def __init__(self, message: str, outcomes: list[TestOutcome] | None = None):
        super().__init__(message)
        self.outcomes = outcomes or []


@dataclass(frozen=True)
class BuildResult:
    published: bool
    path: Path
    fingerprint: str
    row_counts: dict[str, int]
    skipped: bool = False
    models: dict[str, ModelStats] = field(default_factory=dict)  # per model of a finished build
    tests: list[TestOutcome] = field(default_factory=list)
    build: str | None = None  # the build file's name
    # Rounds whose new data failed a structural test: round → what failed and what the build holds of it
    excluded_rounds: dict[str, str] = field(default_factory=dict)
    # The structural tests that failed on them (in the builds thrown away for it), with their rows
    excluded_outcomes: list[TestOutcome] = field(default_factory=list)

    @property
    def warnings(self) -> list[TestOutcome]:
        """Plausibility tests that found rows (their metrics are nulled or flagged): published anyway."""
        return [t for t in self.tests if not t.passed and t.severity == "plausibility"]


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


def _read_verified(base: Path) -> dict:
    """builds/verified.json: `builds` maps each kept build found finished (it opened and held
    `_build_info`) to its `file_signature` then; `dependencies` holds the `dependency_digest` of every
    model whose header matched its SQL. Opening each kept build and re-parsing every model cost more
    than the build's own SQL; a file whose signature changed (truncated, replaced) is opened again."""
    try:
        record = json.loads((builds_dir(base) / VERIFIED_INFO).read_text())
        return record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_verified(base: Path, builds: dict[str, list[int]], dependencies: set[str]) -> None:
    record = {"builds": builds, "dependencies": sorted(dependencies)}
    atomic_write(builds_dir(base) / VERIFIED_INFO, lambda tmp: tmp.write_text(json.dumps(record, indent=1)))


def _verified_builds(base: Path) -> dict[str, list[int]]:
    """Kept builds known finished, by name, whose file is still the one that was verified."""
    known = _read_verified(base).get("builds") or {}
    found = {}
    for path in list_builds(base):
        try:
            if known.get(path.name) == file_signature(path) and not path.with_name(path.name + ".wal").exists():
                found[path.name] = known[path.name]
        except OSError:
            continue
    return found


# Raw tables staged one file per round (`<prefix><round>.parquet`): the column naming the round, the prefix.


def _round_of_file(table: str, path: Path) -> str | None:
    """The round key (`v4.1`, `hpc:v3.0`) of a staged file, None for a file of no round."""
    for files in ROUND_FILES.get(table, ()):
        if path.stem.startswith(files.file_prefix):
            return files.key(path.stem[len(files.file_prefix):])
    return None


def _load_raw(con: duckdb.DuckDBPyConnection, base: Path | None, excluded: frozenset[str] = frozenset(),
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
            if name not in tables:
                continue
            mine = [c for (c,) in con.execute(
                "select column_name from information_schema.columns where table_catalog = current_database() "
                "and table_name = ?", [name]).fetchall()]
            theirs = {c for (c,) in con.execute(
                "select column_name from information_schema.columns where table_catalog = 'previous_build' "
                "and table_name = ?", [name]).fetchall()}
            shared = ", ".join(quote_identifier(c) for c in mine if c in theirs)
            for files in files_of_suites:
                of_suite = [r for s, r in map(split_round_key, rounds) if s is files.suite]
                if not of_suite:
                    continue
                only_source = f" and source = '{files.source}'" if files.source else ""
                con.execute(f"insert into {name} ({shared}) select {shared} from previous_build.{name} "
                            f"where {quote_identifier(files.column)} in (select unnest($rounds)){only_source}",
                            {"rounds": of_suite})
    finally:
        con.execute("detach previous_build")


ROW_GROUP_ROWS = 122_880  # DuckDB's row group: the unit of parallel scans


def _largest_staged_rows(con: duckdb.DuckDBPyConnection, base: Path | None) -> int:
    """Rows of the largest staged table, from the Parquet footers (no data read)."""
    largest = 0
    for table in RAW_TABLES:
        files = [str(p) for p in staged_files(table, base)]
        if files:
            [(rows,)] = con.execute("select coalesce(sum(num_rows), 0) from parquet_file_metadata($files)",
                                    {"files": files}).fetchall()
            largest = max(largest, rows)
    return largest


def _load_derived(con: duckdb.DuckDBPyConnection) -> None:
    """Raw tables computed in Python from other raw tables (one implementation of each mapping)."""
    from pipelines.lib.reference.accelerators import default_matcher

    matcher = default_matcher()
    names = con.execute(
        "select accelerator_model_name, system_name from raw_mlperf_systems "
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


SHOWN_ROWS = 5


def relation_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """(column name, DuckDB type) in order, of every table and view of the build, in one query."""
    found: dict[str, list[tuple[str, str]]] = {}
    for table, column, data_type in con.execute(
            "select table_name, column_name, data_type from information_schema.columns "
            "where table_schema = 'main' order by table_name, ordinal_position").fetchall():
        found.setdefault(table, []).append((column, data_type))
    return found


def row_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Exact row count of every table and view of the build, in one query (a UNION ALL of counts)."""
    names = [t for (t,) in con.execute(
        "select table_name from information_schema.tables where table_schema = 'main' order by 1").fetchall()]
    if not names:
        return {}
    query = " union all ".join(f"select {i} as i, count(*) as n from {quote_identifier(t)}" for i, t in enumerate(names))
    return {names[i]: n for i, n in con.execute(query).fetchall()}


def run_tests(con: duckdb.DuckDBPyConnection, tests: list[SqlTest],
              columns: dict[str, list[tuple[str, str]]]) -> list[TestOutcome]:
    """Every SQL test; a test fails when it returns rows (shown with the source each came from)."""
    queries = [grain_test_sql(test.model, test.grain, [c for c, _ in columns[test.model]]) if test.generated
               else test.sql for test in tests]
    # One statement answers which tests return a row (EXISTS stops at the first); only those run again
    # for the rows to show. Newlines keep a test's trailing comment from swallowing the parenthesis.
    failing: set[int] = set()
    if queries:
        which = "\nunion all\n".join(f"select {i} as test, exists (\n{sql}\n) as fails" for i, sql in enumerate(queries))
        failing = {i for i, fails in con.execute(which).fetchall() if fails}
    outcomes = []
    for i, (test, sql) in enumerate(zip(tests, queries, strict=True)):
        if i not in failing:
            outcomes.append(TestOutcome(test.name, test.model, test.description, True, [], False, test.generated,
                                        test.severity))
            continue
        cursor = con.execute(sql)
        rows = cursor.fetchmany(SHOWN_ROWS + 1)
        names = [d[0] for d in cursor.description]
        offending = []
        for row in rows[:SHOWN_ROWS]:
            record = dict(zip(names, row, strict=False))
            offending.append(record | {"_source": row_source(con, record)})
        outcomes.append(TestOutcome(test.name, test.model, test.description, not rows, offending,
                                    len(rows) > SHOWN_ROWS, test.generated, test.severity))
    return outcomes


def row_source(con: duckdb.DuckDBPyConnection, record: dict) -> str:
    """Where an offending row's data came from: the result files of a result, the snapshot and URL
    of a price, else the raw table it traces to."""
    parts = []
    key = {k: record.get(k) for k in ("round", "submitter", "system", "benchmark")}
    if key["round"] is not None and key["submitter"] is not None:
        where = " and ".join(f"{k} = ?" for k, v in key.items() if v is not None)
        files = [f for (f,) in con.execute(
            f"select run_file from raw_mlperf_runs where {where} order by 1 limit 3",
            [v for v in key.values() if v is not None]).fetchall()]
        archive = f"results archive {key['round']} (raw/mlperf/training_results_{key['round']}.tar.gz)"
        parts.append(archive + (f", files {', '.join(files)}" if files else ""))
    elif key["round"] is not None:
        parts.append(f"results archive {key['round']}")
    if record.get("provider") is not None:
        args = [record["provider"]] + [record.get(k) for k in ("sku", "region", "pricing_model")]
        found = con.execute(
            "select snapshot, source_url from raw_cloud_prices where provider = ? and (? is null or sku = ?) "
            "and (? is null or region = ?) and (? is null or pricing_model = ?) order by fetched_at desc limit 1",
            [args[0], args[1], args[1], args[2], args[2], args[3], args[3]]).fetchall()
        parts.append(f"price list {record['provider']}" + (f" snapshot {found[0][0]} ({found[0][1]})" if found else ""))
    return "; ".join(parts) or "see the test's SQL for the tables it reads"


def build(base: Path | None = None, *, force: bool = False, keep: int = KEEP_BUILDS,
          parameters: BuildParameters | None = None) -> BuildResult:
    """Build, test and publish, one build at a time per warehouse (others wait for the lock). `parameters`:
    the assumptions the build applies (default: BuildParameters())."""
    from pipelines.lib.io.locking import build_lock

    base = (base or warehouse_dir()).resolve()
    builds_dir(base).mkdir(parents=True, exist_ok=True)
    with build_lock(builds_dir(base)):
        verified = remove_unfinished_builds(base)
        republish_if_damaged(base, verified)
        return _build(base, force=force, keep=keep, verified=verified, parameters=parameters or BuildParameters())


def published_opens(base: Path | None = None, verified: dict[str, list[int]] | None = None) -> str | None:
    """None if the published file opens and holds a finished build; else why not. A published file
    that is (hard link of) a build in `verified`, unchanged since, is not opened again."""
    return finished_build_error(published_db(base), verified)


def republish_if_damaged(base: Path, verified: dict[str, list[int]] | None = None) -> dict | None:
    """A published file that does not open is replaced by the newest kept build that does."""
    from pipelines.lib.warehouse.publish import complete_builds, read_build_record

    if not published_db(base).exists() or published_opens(base, verified) is None:
        return None
    for candidate in reversed(complete_builds(base)):
        record = read_build_record(candidate) | {"republished_because": "published file did not open"}
        publish(candidate, base)
        write_published_info(record, base)
        return record
    return None


def remove_unfinished_builds(base: Path) -> dict[str, list[int]]:
    """Under the build lock no build is running, so a WAL file or a build without `_build_info`
    is what a killed or failed build left behind (a WAL would also block opening its file).
    Returns the kept builds known finished, by name, with their `file_signature`."""
    for wal in [*builds_dir(base).glob("*.wal"), published_db(base).with_name(published_db(base).name + ".wal")]:
        if wal.exists():
            wal.unlink()
    published = published_db(base)
    published_inode = published.stat().st_ino if published.exists() else None
    verified = _verified_builds(base)
    newly_verified = False
    for path in list_builds(base):
        if path.name in verified:
            continue
        if finished_build_error(path) is None:  # finished, but not yet in verified.json
            verified[path.name] = file_signature(path)
            newly_verified = True
        elif path.stat().st_ino != published_inode:
            path.unlink(missing_ok=True)
    if newly_verified:  # kept for refreshes that then skip the build (inputs unchanged)
        _write_verified(base, verified, set(_read_verified(base).get("dependencies") or ()))
    return verified


@dataclass
class _Attempt:
    """One build file: its tests, and the rounds whose rows failed a structural test (None: a failure
    no round explains, which stops the publish)."""

    counts: dict[str, int]
    columns: dict[str, list[tuple[str, str]]]
    outcomes: list[TestOutcome]
    dependencies: set[str]
    failing_rounds: dict[str, str] | None
    built_at: str | None = None


def _build(base: Path, *, force: bool, keep: int, verified: dict[str, list[int]] | None = None,
           parameters: BuildParameters = BuildParameters()) -> BuildResult:  # noqa: B008 (frozen)
    fingerprint = input_fingerprint(base, parameters)
    target = published_db(base)
    info = read_published_info(base) or {}
    if (not force and target.exists() and info.get("fingerprint") == fingerprint
            and published_opens(base, verified) is None):
        return BuildResult(False, target, fingerprint, {}, skipped=True,
                           excluded_rounds=dict(info.get("excluded_rounds") or {}))
    verified = dict(verified or {})
    dependencies_verified = frozenset(_read_verified(base).get("dependencies") or ())
    previous = target if target.exists() and published_opens(base, verified) is None else None

    models = load_models()  # raises, loudly, when the package ships no model
    out_dir = builds_dir(base)
    out_dir.mkdir(parents=True, exist_ok=True)
    # A round whose rows fail a structural test is built again from its previously published rows; if
    # those fail too (or there are none), it is left out. Each pass excludes at least one more round.
    excluded: dict[str, str] = {}
    from_previous: set[str] = set()
    excluded_outcomes: dict[str, TestOutcome] = {}
    while True:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        build_path = ensure_inside(out_dir / f"mlperf-{stamp}.duckdb", base)
        excluded_rounds = _excluded_rounds(excluded, from_previous)
        attempt = _attempt(base, build_path, models, dependencies_verified, fingerprint,
                           excluded_rounds, previous, frozenset(from_previous), parameters=parameters)
        if not attempt.failing_rounds:
            break
        _remove_build(build_path)
        excluded_outcomes.update({o.name: o for o in attempt.outcomes if o.blocks and o.name not in excluded_outcomes})
        for round_version, why in attempt.failing_rounds.items():
            if round_version in from_previous:
                from_previous.discard(round_version)
                excluded[round_version] += (f"; its previously published rows fail this build's tests too ({why}): "
                                            "the round is left out")
            elif round_version in excluded:  # left out, yet its rows are still there: cannot happen
                raise BuildFailed(f"warehouse checks failed, nothing published: {why}", attempt.outcomes)
            else:
                excluded[round_version] = why
                if previous is not None:
                    from_previous.add(round_version)
    if excluded and not attempt.counts.get("fct_training_result"):
        _remove_build(build_path)
        raise BuildFailed("warehouse checks failed, nothing published: no round is left with results: "
                          + "; ".join(f"{r}: {why}" for r, why in excluded_rounds.items()),
                          list(excluded_outcomes.values()))
    newer = (read_published_info(base) or {}).get("build")
    if newer and newer > build_path.name and target.exists():
        # Builds are serialized by the lock, so this only happens after a clock step back; never
        # let an older build replace a newer published one.
        return BuildResult(False, target, fingerprint, attempt.counts, skipped=True)
    publish(build_path, base)
    write_published_info(
        {"fingerprint": fingerprint, "build": build_path.name, "built_at": attempt.built_at,
         "row_counts": attempt.counts, "excluded_rounds": excluded_rounds}, base
    )
    prune_builds(base, keep)
    kept = {p.name for p in list_builds(base)}
    verified = {name: sig for name, sig in verified.items() if name in kept}
    verified[build_path.name] = file_signature(build_path)
    _write_verified(base, verified, attempt.dependencies)
    stats = {name: ModelStats(attempt.counts[name], attempt.columns[name]) for name in models}
    return BuildResult(True, target, fingerprint, attempt.counts, models=stats, tests=attempt.outcomes,
                       build=build_path.name, excluded_rounds=excluded_rounds,
                       excluded_outcomes=list(excluded_outcomes.values()))


def _excluded_rounds(excluded: dict[str, str], from_previous: set[str]) -> dict[str, str]:
    """round → what failed on its new data and what the build holds of the round instead."""
    return {
        r: why + ("; the previously published rows of the round stay" if r in from_previous
                  else "" if "left out" in why else "; no previously published rows: the round is not in the warehouse")
        for r, why in sorted(excluded.items())
    }


def _remove_build(build_path: Path) -> None:
    build_path.unlink(missing_ok=True)
    build_path.with_name(build_path.name + ".wal").unlink(missing_ok=True)


def _attempt(base: Path, build_path: Path, models: dict, dependencies_verified: frozenset[str], fingerprint: str,
             excluded: dict[str, str], previous: Path | None, from_previous: frozenset[str],
             parameters: BuildParameters = BuildParameters()) -> _Attempt:  # noqa: B008 (frozen)
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
            if _largest_staged_rows(con, base) < ROW_GROUP_ROWS:
                # Every table fits in one row group, which one thread scans: a second one only adds
                # coordination (builds with larger tables keep every core),
                # and float sums then come out bit for bit the same in every build.
                con.execute("set threads = 1")
            _load_raw(con, base, frozenset(excluded), previous, from_previous)
            load_seeds(con)
            con.execute("create table raw_build_parameters (name varchar, value double, source varchar)")
            con.executemany("insert into raw_build_parameters values (?, ?, ?)", parameters.rows())
            create_macros(con)
            _load_derived(con)
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
                failing = _failing_rounds(con, [t for t in tests if t.name in {o.name for o in blocking}], columns,
                                          {o.name: o for o in blocking})
                if failing is None:
                    failures = [o.report() for o in blocking]
                    # The first line is what a one-line summary shows: each test with its first offending row.
                    headline = "; ".join(f.splitlines()[0] + " e.g. " + f.splitlines()[1].strip("- ") for f in failures)
                    raise BuildFailed(f"warehouse checks failed, nothing published: {headline}\n" + "\n".join(failures),
                                      outcomes)
                return _Attempt({}, columns, outcomes, dependencies, failing)
            for name in models:  # the headers' descriptions travel with the data (BI tools show them)
                for statement in comment_statements(models[name]):
                    con.execute(statement)
            built_at = datetime.now(UTC).isoformat()
            con.execute(
                "create table _build_info as select ?::varchar as built_at, ?::varchar as fingerprint, "
                "?::varchar as excluded_rounds",
                [built_at, fingerprint, json.dumps(excluded)],
            )
            counts = row_counts(con)
            con.execute("checkpoint")
        finally:
            con.close()
    except BaseException:
        _remove_build(build_path)
        raise
    return _Attempt(counts, columns, outcomes, dependencies, {}, built_at)


def _failing_rounds(con: duckdb.DuckDBPyConnection, tests: list[SqlTest], columns: dict[str, list[tuple[str, str]]],
                    outcomes: dict[str, TestOutcome]) -> dict[str, str] | None:
    """round → the first failing structural test and row of that round; None when some failing test
    has rows of no round (it tests what no single round owns, e.g. a seed or the price tables)."""
    found: dict[str, str] = {}
    for test in tests:
        sql = (grain_test_sql(test.model, test.grain, [c for c, _ in columns[test.model]]) if test.generated
               else test.sql)
        try:
            rounds = [r for (r,) in con.execute(f"select distinct round from (\n{sql}\n) order by 1").fetchall()]
        except duckdb.Error:  # the test's rows have no `round` column
            return None
        if not rounds or any(r is None for r in rounds):
            return None
        outcome = outcomes[test.name]
        suite = suite_of_model(test.model)
        for round_version in rounds:
            example = next((r for r in outcome.offending if r.get("round") == round_version), None)
            shown = ", ".join(f"{k}={v!r}" for k, v in (example or {}).items() if k not in ("_source", "round"))
            found.setdefault(f"{suite.exclusion_prefix}{round_version}",
                             f"{test.name} failed" + (f" ({shown})" if shown else ""))
    return found
