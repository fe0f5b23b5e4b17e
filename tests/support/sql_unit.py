"""SQL unit tests of the models and macros (SQLMesh-style): input rows in, expected rows out, no archive.

One YAML file per model or macro, `sql/unit_tests/<model or macro>.yaml`: a list of cases, each

    - name: drops_fastest_and_slowest                 # unique in its file (the test id: <file>::<name>)
      description: what property the case pins, and why it holds (the rule it comes from)
      inputs:                                         # relation -> its rows (or {rows: [...], types: {...}})
        stg_training_runs:
          - {round: v4.1, run_file: a/result_0.txt, time_to_train_minutes: 10.0}
        dim_benchmark: []                             # an empty relation
      query: select ...                               # optional (required for a macro): what is compared
      expected:                                       # rows of the model (or of `query`)
        - {run_file: a/result_0.txt, in_olympic_mean: false}

A model's case gives every relation its header's `depends on` names, and no other; a macro's case gives what its
query reads. An input relation has the columns and types the build gives it: a public model's `-- columns:` block,
a staged raw table's schema, a seed's (all text), any other model's as it comes out of its own SQL run over empty
inputs of those. Its rows name only the columns the case needs; the others are NULL. A relation of no known columns
(the build parameters, a macro case's own tables) has the columns its rows name, typed by DuckDB from the values
(or by `types: {column: duckdb type}`, which a column of only nulls needs). The macros of sql/macros.sql exist in
every case. `expected` is compared as a multiset, on the columns its rows list (every row lists the same ones);
numbers within 1e-9 relative. YAML anchors and merge keys keep repeated rows short: `- &run1 {...}` is itself a
row, `- {<<: *run1, run_file: r2}` another; an anchor name is used once a file (PyYAML refuses it twice).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import duckdb
import yaml

from pipelines.lib.warehouse.models import Model, create_macros, load_models, sql_dir
from pipelines.lib.warehouse.query import quote_ident

UNIT_TESTS_DIR = "unit_tests"
CASE_KEYS = {"name", "description", "inputs", "query", "expected"}
INPUT_KEYS = {"rows", "types"}
REL_TOL = 1e-9


class CaseError(ValueError):
    """A unit-test file or case is malformed (not a failing expectation: that is an AssertionError)."""


@dataclass(frozen=True)
class Input:
    rows: tuple[dict, ...]
    types: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    target: str  # the model or macro the file is named after
    name: str
    description: str
    inputs: dict[str, Input]
    expected: tuple[dict, ...]
    query: str | None = None
    path: Path | None = None

    @property
    def id(self) -> str:
        return f"{self.target}::{self.name}"


# libyaml's safe loader where PyYAML has it (its wheels do): the same documents, read without Python's parser
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def unit_tests_dir() -> Path:
    return sql_dir() / UNIT_TESTS_DIR


@cache
def models() -> dict[str, Model]:
    return load_models()


@cache
def macro_names() -> frozenset[str]:
    """The macros sql/macros.sql creates, as DuckDB lists them once it has run."""
    with duckdb.connect() as con:
        create_macros(con)
        return frozenset(n for (n,) in con.execute(
            "select function_name from duckdb_functions() where function_type like '%macro' and not internal").fetchall())


def _rows(value, where: str) -> tuple[dict, ...]:
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise CaseError(f"{where}: rows must be a list of mappings (column: value)")
    return tuple(value)


def parse_case(item, target: str, where: str, path: Path | None = None) -> Case:
    if not isinstance(item, dict):
        raise CaseError(f"{where}: a case is a mapping with {sorted(CASE_KEYS)}")
    unknown = set(item) - CASE_KEYS
    missing = {"name", "description", "inputs", "expected"} - set(item)
    if unknown or missing:
        raise CaseError(f"{where}: case {item.get('name')!r} has unknown keys {sorted(unknown)} / lacks {sorted(missing)}")
    where = f"{where} case {item['name']!r}"
    if not str(item["description"]).strip():
        raise CaseError(f"{where}: the description says what property the case pins and why")
    if not isinstance(item["inputs"] or {}, dict):
        raise CaseError(f"{where}: inputs map each relation to its rows")
    inputs = {}
    for relation, spec in (item["inputs"] or {}).items():
        if isinstance(spec, dict):
            if set(spec) - INPUT_KEYS:
                raise CaseError(f"{where}: input {relation} has unknown keys {sorted(set(spec) - INPUT_KEYS)}")
            inputs[relation] = Input(_rows(spec.get("rows", []), f"{where} input {relation}"),
                                     {c: str(t) for c, t in (spec.get("types") or {}).items()})
        else:
            inputs[relation] = Input(_rows(spec, f"{where} input {relation}"))
    return Case(target, str(item["name"]), str(item["description"]), inputs,
                _rows(item["expected"], f"{where} expected"), item.get("query"), path)


def load_cases(root: Path | None = None) -> list[Case]:
    """Every case of every file under sql/unit_tests/, checked: a file is named after a model or a macro, a
    macro's case has a query, names are unique in their file."""
    root = Path(root) if root is not None else unit_tests_dir()
    cases: list[Case] = []
    stray = sorted(p.name for p in root.glob("*.yml"))
    if stray:
        raise CaseError(f"{root}: {stray}: a unit-test file is named <model or macro>.yaml")
    for path in sorted(root.glob("*.yaml")):
        target = path.stem
        if target not in models() and target not in macro_names():
            raise CaseError(f"{path}: named after neither a model nor a macro of sql/macros.sql")
        try:
            items = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
        except yaml.YAMLError as exc:
            raise CaseError(f"{path}: not YAML: {exc}") from None
        if not isinstance(items, list) or not items:
            raise CaseError(f"{path}: a unit-test file is a non-empty list of cases")
        names = set()
        for i, item in enumerate(items):
            case = parse_case(item, target, f"{path} #{i + 1}", path)
            if case.name in names:
                raise CaseError(f"{path}: case name {case.name!r} used twice")
            if target not in models() and not case.query:
                raise CaseError(f"{path}: case {case.name!r} tests macro {target}: it needs a `query`")
            names.add(case.name)
            cases.append(case)
    return cases


# --- the columns of an input relation -------------------------------------------------------------------------

def _describe(con: duckdb.DuckDBPyConnection, relation: str) -> dict[str, str]:
    return {name: type_ for name, type_, *_ in con.execute(f"describe {quote_ident(relation)}").fetchall()}


@cache
def known_columns(relation: str) -> dict[str, str] | None:
    """Column → DuckDB type of `relation` as a build makes it, or None when not known without data."""
    from pipelines.lib.reference.seeds import SEED_TABLES, load_seeds
    from pipelines.lib.warehouse.raw_tables import RAW_TABLES, empty

    model = models().get(relation)
    if model is not None and model.columns:
        return {c.name: c.type for c in model.columns}
    with duckdb.connect() as con:
        if model is not None:
            upstream = {d: known_columns(d) for d in model.depends_on}
            if any(columns is None for columns in upstream.values()):
                return None
            create_macros(con)
            for name, columns in upstream.items():
                create_input(con, name, Input(()), columns)
            con.execute(f"create {model.kind} {relation} as {model.sql}")
            return _describe(con, relation)
        table = relation.removeprefix("raw_")
        if relation.startswith("raw_") and table in RAW_TABLES:
            con.register("empty_raw", empty(table))
            return _describe(con, "empty_raw")
        if relation.startswith("raw_") and table in SEED_TABLES:
            load_seeds(con, {table: SEED_TABLES[table]})
            return _describe(con, relation)
    return None


def create_input(con: duckdb.DuckDBPyConnection, relation: str, given: Input, known: dict[str, str] | None) -> None:
    """`relation` as a table of the `given` rows: with the `known` columns (the others NULL) or, unknown, the
    columns the rows name, typed by `given.types` or by DuckDB from the values."""
    named = list(dict.fromkeys(c for row in given.rows for c in row))
    if known is not None:
        stray = [c for c in [*named, *given.types] if c not in known]
        if stray:
            raise CaseError(f"input {relation}: no column {stray} (its columns: {', '.join(known)})")
        types = known | given.types
    else:
        types = {c: given.types.get(c) for c in dict.fromkeys([*named, *given.types])}
    values = {c: [row.get(c) for row in given.rows] for c in named}
    for column, type_ in types.items():
        if type_ is None:
            if all(v is None for v in values[column]):
                raise CaseError(f"input {relation}: column {column} holds only nulls: give its type "
                                f"(inputs: {{{relation}: {{rows: [...], types: {{{column}: varchar}}}}}})")
            (types[column],) = con.execute("select typeof(unnest($v)) limit 1", {"v": values[column]}).fetchone()
    if not types:
        raise CaseError(f"input {relation}: no columns (give rows, or `types` for an empty relation)")
    con.execute(f"create table {quote_ident(relation)} ("
                + ", ".join(f"{quote_ident(c)} {t}" for c, t in types.items()) + ")")
    if given.rows:
        params = {f"p{i}": values[c] for i, c in enumerate(named)}
        con.execute(f"insert into {quote_ident(relation)} ({', '.join(map(quote_ident, named))}) select "
                    + ", ".join(f"unnest($p{i})::{types[c]}" for i, c in enumerate(named)), params)


# --- running and comparing -------------------------------------------------------------------------------------

def run_case(case: Case) -> list[dict]:
    """The rows the case's model (or query) gives over its inputs, in a fresh in-memory DuckDB."""
    model = models().get(case.target)
    if model is not None:
        missing = [d for d in model.depends_on if d not in case.inputs]
        extra = [r for r in case.inputs if r not in model.depends_on]
        if missing or extra:
            raise CaseError(f"{case.id}: {model.name} reads {', '.join(model.depends_on)}; the case "
                            + (f"does not give {', '.join(missing)}" if missing else "")
                            + (" and " if missing and extra else "")
                            + (f"gives {', '.join(extra)}, which the model does not read" if extra else ""))
    with duckdb.connect() as con:
        con.execute("set threads = 1")
        create_macros(con)
        for relation, given in case.inputs.items():
            try:
                create_input(con, relation, given, known_columns(relation) if model is not None else None)
            except CaseError as exc:
                raise CaseError(f"{case.id}: {exc}") from None
        if model is not None:
            con.execute(f"create {model.kind} {model.name} as {model.sql}")
        cursor = con.execute(case.query or f"select * from {model.name}")
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def same_value(expected, got) -> bool:
    if expected is None or got is None:
        return expected is None and got is None
    if isinstance(expected, bool) or isinstance(got, bool):
        return isinstance(expected, bool) and isinstance(got, bool) and expected == got
    if isinstance(expected, int | float | decimal.Decimal) and isinstance(got, int | float | decimal.Decimal):
        e, g = float(expected), float(got)
        return e == g or math.isclose(e, g, rel_tol=REL_TOL, abs_tol=0.0)
    if isinstance(expected, str) and isinstance(got, dt.date):  # a date or timestamp spelled in ISO form
        return got.isoformat(sep=" ") == expected if isinstance(got, dt.datetime) else got.isoformat() == expected
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(map(same_value, expected, got))
    return type(expected) is type(got) and expected == got


def _same_row(expected: dict, got: dict, columns: list[str]) -> bool:
    return all(same_value(expected[c], got[c]) for c in columns)


def _show(rows, columns: list[str]) -> str:
    return "\n".join("    " + ", ".join(f"{c}={r[c]!r}" for c in columns) for r in rows) or "    (none)"


def compare(case: Case, got: list[dict]) -> None:
    """AssertionError unless `got` holds the case's expected rows, as a multiset, on the columns they list."""
    columns = list(case.expected[0]) if case.expected else []
    for row in case.expected:
        if list(row) != columns:
            raise CaseError(f"{case.id}: every expected row lists the same columns ({columns}), not {list(row)}")
    have = list(got[0]) if got else None
    absent = [c for c in columns if have is not None and c not in have]
    if absent:
        raise CaseError(f"{case.id}: the result has no column {absent} (its columns: {', '.join(have)})")
    unmatched = list(got)
    missing = []
    for row in case.expected:
        match = next((i for i, g in enumerate(unmatched) if _same_row(row, g, columns)), None)
        if match is None:
            missing.append(row)
        else:
            unmatched.pop(match)
    if missing or unmatched:
        shown = columns or (have or [])
        raise AssertionError(
            f"{case.id}: {case.description.strip()}\n"
            f"  expected, not got ({len(missing)}):\n{_show(missing, shown)}\n"
            f"  got, not expected ({len(unmatched)}):\n{_show(unmatched, shown)}\n"
            f"  expected (all {len(case.expected)}):\n{_show(case.expected, shown)}\n"
            f"  got (all {len(got)}):\n{_show(got, shown)}")


def check(case: Case) -> None:
    compare(case, run_case(case))
