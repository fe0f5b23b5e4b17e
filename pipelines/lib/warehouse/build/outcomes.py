"""What the SQL tests found: each test's outcome with the offending rows and where each came from, and which rounds
a structural failure is the fault of (`core` then builds again without their new data).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from pipelines.lib.mlperf.suites import SUITES, RoundKey, Suite
from pipelines.lib.warehouse.models import SqlTest, grain_test_sql

SHOWN_ROWS = 5


def suite_of_model(model: str) -> Suite:
    """The suite whose rounds a model's rows are: `<layer>_<suite name>_*` that suite's (`fct_hpc_result` HPC's),
    everything else the suite whose rounds have no prefix, Training (`dim_system`, `mart_cost_to_train`): a test
    of an HPC model names HPC rounds, never the Training round of that name."""
    _layer, _, rest = model.partition("_")
    for suite in SUITES.values():
        if rest.startswith(f"{suite.name}_"):
            return suite
    return next(suite for suite in SUITES.values() if not suite.exclusion_prefix)


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
            f"select run_file from raw_training_runs where {where} order by 1 limit 3",
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


def failing_rounds(con: duckdb.DuckDBPyConnection, tests: list[SqlTest], columns: dict[str, list[tuple[str, str]]],
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
            found.setdefault(str(RoundKey(suite, round_version)),
                             f"{test.name} failed" + (f" ({shown})" if shown else ""))
    return found
