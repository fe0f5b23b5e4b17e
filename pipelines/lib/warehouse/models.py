"""The SQL models and SQL tests of the warehouse, read from their headers (no Dagster here).

Every model file (`sql/staging`, `sql/intermediate`, `sql/marts`) starts with a header of
`-- key: value` lines, like SQLMesh's MODEL block:

    -- model: fct_training_result
    -- kind: table                                 (table | view)
    -- grain: round, submitter, system, benchmark  (or `none: <why>` for event or log tables)
    -- depends on: int_result_score, dim_system    (every relation the SQL reads)
    -- description: one line
    -- columns:                                   (public models: dim_, fct_, mart_)
    --   score_minutes double: the official score as published, minutes
    --   round varchar                             (no description: the glossary's, sql/glossary.csv)

Every column of a public model is declared with its DuckDB type and a one-line description; the
table reference (docs/pages/tables.md) and the assets' column schemas are made from these lines.
Build order is a topological sort of `depends on`; `check_dependencies` compares each header with
what DuckDB's own parser (`json_serialize_sql`) says the SQL reads. Every file of `sql/tests/`
starts with `-- tests: <model>` and `-- description: ...`; a uniqueness test is generated from each
model's grain.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.lib.io.package_data import package_path

LAYER_DIRS = ("staging", "intermediate", "marts")
PREFIXES = ("stg_", "int_", "dim_", "fct_", "mart_")
KINDS = ("table", "view")
MODEL_KEYS = ("model", "kind", "grain", "depends on", "description")
TEST_KEYS = ("tests", "severity", "description")
# What a failing SQL test does (every test file states one in `-- severity:`):
#   structural    an invariant of the data's shape (grain, keys, one score per result, a score equal to
#                 what the rules give, values from their vocabulary): the rounds of the offending rows
#                 are left out of the build (their previously published rows stay); rows of no round
#                 stop the publish
#   plausibility  a metric value that the model has nulled or flagged with its reason: a warning naming
#                 the rows, never a stop
SEVERITIES = ("structural", "plausibility")
# Tables the build creates itself before the models run (see build/): staged Parquet as `raw_<table>`,
# seeds shipped with the code as `raw_<seed>`, and a mapping computed in Python from raw tables.
DERIVED_TABLES = {"raw_mlperf_accelerator_map": "raw_training_systems"}
PUBLIC_PREFIXES = ("dim_", "fct_", "mart_")  # the tables of the public contract: columns declared in the header
GLOSSARY_FILE = "glossary.csv"  # descriptions of columns many public models share (round, submitter, ...)
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_HEADER_LINE = re.compile(r"^--\s*([a-z][a-z ]*[a-z]):\s*(.*?)\s*$")
_COLUMNS_START = "-- columns:"
# `--   name type: description` or `--   name type` (described by the glossary); type as DuckDB names it
_COLUMN_LINE = re.compile(r"^--   ([a-z_][a-z0-9_]*) ([a-z][a-z0-9 ()_,\[\]]*?)(?::\s+(\S.*?))?\s*$")


class ModelError(ValueError):
    """A model or SQL test is missing, has a bad header, or its dependencies do not hold."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # DuckDB's name of the type, lower case (varchar, double, timestamp with time zone, ...)
    description: str


@dataclass(frozen=True)
class Model:
    name: str
    layer: str  # staging | intermediate | marts (the folder)
    kind: str  # table | view
    grain: tuple[str, ...]  # empty when the model has no grain (then grain_note says why)
    grain_note: str
    depends_on: tuple[str, ...]
    description: str
    sql: str
    path: Path
    columns: tuple[Column, ...] = ()  # declared in the header (public models), in the model's order
    notes: str = ""  # the prose comment after the header

    @property
    def is_public(self) -> bool:
        return self.name.startswith(PUBLIC_PREFIXES)


@dataclass(frozen=True)
class SqlTest:
    """A query that must return no rows. `generated` tests come from a model's grain."""

    name: str
    model: str
    description: str
    sql: str
    path: Path | None = None
    generated: bool = False
    grain: tuple[str, ...] = field(default=())
    severity: str = "structural"  # one of SEVERITIES


def sql_dir() -> Path:
    return package_path("sql")


def external_relations() -> dict[str, str]:
    """Every relation a model may read that is not a model: name → where it comes from."""
    from pipelines.lib.reference.seeds import SEED_TABLES
    from pipelines.lib.warehouse.raw_tables import RAW_TABLES

    found = {f"raw_{t}": "staged" for t in RAW_TABLES}
    found |= {f"raw_{s}": "seed" for s in SEED_TABLES}
    found |= {name: "derived" for name in DERIVED_TABLES}
    found["raw_build_parameters"] = "parameters"  # the build's assumptions (lib/warehouse/parameters.py)
    return found


def parse_header(text: str, where: str, keys: tuple[str, ...] = MODEL_KEYS) -> dict[str, str]:
    """The leading `-- key: value` lines of a SQL file, for the known `keys` (stops at the first
    other line, so the prose comment that follows is never read as header)."""
    header: dict[str, str] = {}
    for line in text.splitlines():
        match = _HEADER_LINE.match(line.strip())
        if not match or match.group(1) not in keys:
            break
        key, value = match.group(1), match.group(2)
        if key in header:
            raise ModelError(f"{where}: header key {key!r} given twice")
        header[key] = value
    return header


def load_glossary(root: Path | None = None) -> dict[str, str]:
    """Column name → description, for columns whose meaning is the same in every public model."""
    import csv

    path = (Path(root) if root is not None else sql_dir()) / GLOSSARY_FILE
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8", newline="") as f:
        return {row["column"]: row["description"] for row in csv.DictReader(f)}


def _comment_block(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line.rstrip())
    return lines


def parse_columns(text: str, where: str, glossary: dict[str, str]) -> tuple[tuple[Column, ...], str]:
    """The `-- columns:` block that follows the header keys, and the prose comment after it."""
    comment = _comment_block(text)
    start = next((i for i, line in enumerate(comment) if not _HEADER_LINE.match(line.strip())
                  or _HEADER_LINE.match(line.strip()).group(1) not in MODEL_KEYS), len(comment))
    columns: list[Column] = []
    rest = start
    if start < len(comment) and comment[start].strip() == _COLUMNS_START:
        rest = start + 1
        while rest < len(comment) and comment[rest].startswith("--   "):
            match = _COLUMN_LINE.match(comment[rest])
            if not match:
                raise ModelError(f"{where}: column line {comment[rest]!r} is not '--   name type: description'")
            name, type_, description = match.group(1), match.group(2).strip(), match.group(3)
            if description is None:
                if name not in glossary:
                    raise ModelError(f"{where}: column {name} has no description and sql/{GLOSSARY_FILE} has none")
                description = glossary[name]
            if any(c.name == name for c in columns):
                raise ModelError(f"{where}: column {name} declared twice")
            columns.append(Column(name, type_, description))
            rest += 1
    notes = "\n".join(line[2:].removeprefix(" ") for line in comment[rest:])
    return tuple(columns), notes


def _names(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def parse_model(path: Path, layer: str, glossary: dict[str, str] | None = None) -> Model:
    text = path.read_text(encoding="utf-8")
    header = parse_header(text, str(path))
    missing = [k for k in MODEL_KEYS if not header.get(k)]
    if missing:
        raise ModelError(f"{path}: model header lacks {', '.join(repr(k) for k in missing)} "
                         f"(every model starts with '-- model:', '-- kind:', '-- grain:', '-- depends on:', "
                         "'-- description:' lines)")
    name = header["model"]
    if name != path.stem:
        raise ModelError(f"{path}: header names model {name!r}, but the file is {path.stem}.sql")
    if not name.startswith(PREFIXES):
        raise ModelError(f"{path}: model {name!r} has no layer prefix ({', '.join(PREFIXES)})")
    if header["kind"] not in KINDS:
        raise ModelError(f"{path}: kind {header['kind']!r} is not one of {KINDS}")
    grain_text = header["grain"]
    if grain_text.startswith("none"):
        note = grain_text[4:].strip(" :,;-—()")
        if not note:
            raise ModelError(f"{path}: 'grain: none' needs a reason, e.g. 'grain: none: one row per log line'")
        grain: tuple[str, ...] = ()
    else:
        grain, note = _names(grain_text), ""
        bad = [c for c in grain if not _IDENTIFIER.match(c)]
        if bad:
            raise ModelError(f"{path}: grain columns must be plain column names, not {bad}")
    depends_on = _names(header["depends on"])
    columns, notes = parse_columns(text, str(path), glossary if glossary is not None else load_glossary(path.parent.parent))
    return Model(name, layer, header["kind"], grain, note, depends_on, header["description"], text, path,
                 columns, notes)


MACROS_FILE = "macros.sql"


def create_macros(con, root: Path | None = None) -> None:
    """The SQL functions every model may call (`sql/macros.sql`), created before the models run."""
    con.execute(((Path(root) if root is not None else sql_dir()) / MACROS_FILE).read_text(encoding="utf-8"))


def load_models(root: Path | None = None) -> dict[str, Model]:
    """Every model under `root` (default: the installed `sql` package), checked: headers valid, every
    dependency known, no cycle. Raises ModelError, loudly, when there is no model at all."""
    root = Path(root) if root is not None else sql_dir()
    models: dict[str, Model] = {}
    glossary = load_glossary(root)
    for layer in LAYER_DIRS:
        for path in sorted((root / layer).glob("*.sql")):
            model = parse_model(path, layer, glossary)
            if model.name in models:
                raise ModelError(f"model {model.name} is defined twice: {models[model.name].path} and {path}")
            models[model.name] = model
    if not models:
        raise ModelError(f"no SQL models found in {root}: is the package installed with its data?")
    known = set(models) | set(external_relations())
    for model in models.values():
        unknown = [d for d in model.depends_on if d not in known]
        if unknown:
            raise ModelError(f"{model.path}: depends on unknown relation(s) {unknown} "
                             "(neither a model nor a raw_ staged table, seed or derived table)")
        if model.name in model.depends_on:
            raise ModelError(f"{model.path}: model {model.name} depends on itself")
    model_order(models)  # raises on a cycle
    return models


def model_order(models: dict[str, Model]) -> list[str]:
    """Every model after all models it declares in `depends on` (ties by layer, then name)."""
    order: list[str] = []
    done: set[str] = set()

    def rank(name: str) -> tuple[int, str]:
        return next((i for i, p in enumerate(PREFIXES) if name.startswith(p)), len(PREFIXES)), name

    def visit(name: str, stack: tuple[str, ...] = ()) -> None:
        if name in done:
            return
        if name in stack:
            raise ModelError(f"SQL models depend on each other in a cycle: {' -> '.join(stack + (name,))}")
        for dep in sorted((d for d in models[name].depends_on if d in models), key=rank):
            visit(dep, stack + (name,))
        done.add(name)
        order.append(name)

    for name in sorted(models, key=rank):
        visit(name)
    return order


def relations_read(con, sql: str) -> set[str]:
    """The tables and views a query reads, by DuckDB's own parser: base table names minus CTE names."""
    (serialized,) = con.execute("select json_serialize_sql($sql)", {"sql": sql}).fetchone()
    tree = json.loads(serialized)
    if tree.get("error"):
        raise ModelError(f"SQL does not parse: {tree.get('error_message', tree)}")
    tables: set[str] = set()
    ctes: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE" and node.get("table_name"):
                tables.add(node["table_name"].lower())
            cte_map = node.get("cte_map")
            if isinstance(cte_map, dict):
                ctes.update(entry["key"].lower() for entry in cte_map.get("map", []))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    return tables - ctes


def dependency_digest(model: Model) -> str:
    """What the dependency check of `model` depends on: its SQL, its header and DuckDB's parser."""
    import duckdb

    text = "\0".join([duckdb.__version__, model.name, ",".join(model.depends_on), model.sql])
    return hashlib.sha256(text.encode()).hexdigest()


def check_dependencies(con, models: dict[str, Model], verified: frozenset[str] = frozenset()) -> set[str]:
    """Each model's `depends on` names exactly what its SQL reads; else ModelError naming both.

    A model whose `dependency_digest` is in `verified` passed this check before with the same SQL,
    header and DuckDB version, so it is not parsed again. Returns every model's digest (all hold)."""
    problems = []
    for model in models.values():
        if dependency_digest(model) in verified:
            continue
        try:
            read = relations_read(con, model.sql)
        except ModelError as exc:
            raise ModelError(f"{model.path}: {exc}") from None
        declared = set(model.depends_on)
        if read - declared:
            problems.append(f"{model.name} reads {sorted(read - declared)} but does not declare it in '-- depends on:'")
        if declared - read:
            problems.append(f"{model.name} declares {sorted(declared - read)} in '-- depends on:' but does not read it")
    if problems:
        raise ModelError("model headers disagree with their SQL: " + "; ".join(problems))
    return {dependency_digest(model) for model in models.values()}


def load_tests(models: dict[str, Model], root: Path | None = None) -> list[SqlTest]:
    """The hand-written tests of `sql/tests/` (each names the model it tests) and one generated
    uniqueness test per model with a grain."""
    root = Path(root) if root is not None else sql_dir()
    tests = []
    for path in sorted((root / "tests").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        header = parse_header(text, str(path), TEST_KEYS)
        if not header.get("tests") or not header.get("description") or not header.get("severity"):
            raise ModelError(f"{path}: a SQL test starts with '-- tests: <model>', '-- severity: "
                             f"{' | '.join(SEVERITIES)}' and '-- description: ...'")
        if header["tests"] not in models:
            raise ModelError(f"{path}: tests unknown model {header['tests']!r}")
        if header["severity"] not in SEVERITIES:
            raise ModelError(f"{path}: severity {header['severity']!r} is not one of {SEVERITIES}")
        tests.append(SqlTest(path.stem, header["tests"], header["description"], text, path,
                             severity=header["severity"]))
    for model in models.values():
        if model.grain:
            tests.append(SqlTest(grain_test_name(model), model.name,
                                 f"one row per {', '.join(model.grain)} (the grain declared in the header)",
                                 "", None, generated=True, grain=model.grain))
    names = [t.name for t in tests]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ModelError(f"SQL test names used twice: {twice} (a generated grain test is named <model>_unique)")
    return tests


def comment_statements(model: Model) -> list[str]:
    """COMMENT ON statements that give the built relation its header's description (and grain) and each declared
    column its description: what BI tools, the team catalog and the PostgreSQL mirror show beside the data."""
    from pipelines.lib.warehouse.query import quote_ident, quote_literal

    text = " ".join(model.description.split())
    if model.grain:
        text += f" Grain: one row per {', '.join(model.grain)}."
    name = quote_ident(model.name)
    return [f"comment on {model.kind} {name} is {quote_literal(text)}"] + [
        f"comment on column {name}.{quote_ident(c.name)} is {quote_literal(' '.join(c.description.split()))}"
        for c in model.columns if c.description]


def grain_test_name(model: Model) -> str:
    return f"{model.name}_unique"


def grain_test_sql(model_name: str, grain: tuple[str, ...], columns: list[str]) -> str:
    """`select <grain>, count(*) ... having count(*) > 1` over the model; every grain column must be
    one of the model's actual `columns` (validated, then quoted: no text from a header reaches SQL
    unchecked)."""
    from pipelines.lib.warehouse.query import quote_ident

    missing = [c for c in grain if c not in columns]
    if missing:
        raise ModelError(f"grain of {model_name} names column(s) {missing} the model does not have "
                         f"(its columns: {', '.join(columns)})")
    keys = ", ".join(quote_ident(c) for c in grain)
    return f"select {keys}, count(*) as n from {quote_ident(model_name)} group by {keys} having count(*) > 1"
