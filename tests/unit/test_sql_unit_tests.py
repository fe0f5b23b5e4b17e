"""SQL unit tests: each case of sql/unit_tests/*.yaml runs its model (or macro query) over its input rows in a
fresh in-memory DuckDB and must give its expected rows (the format: tests/support/sql_unit.py). The data tests
of sql/tests/ check a built warehouse; these check the SQL's logic on rows made to show one property each."""

from __future__ import annotations

import pytest

from support.sql_unit import Case, CaseError, Input, check, load_cases, macro_names, unit_tests_dir

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_sql_unit_case(case: Case):
    check(case)


def test_every_macro_has_unit_tests():
    tested = {c.target for c in CASES}
    assert sorted(macro_names() - tested) == [], f"macros of sql/macros.sql without a file in {unit_tests_dir()}"


ROUND_ORDER = dict(target="round_order", description="v4.1 is round 4001", inputs={},
                   query="select round_order('v4.1') as n")


def test_runner_fails_on_a_wrong_expectation():
    """The runner cannot pass silently: a wrong value, a missing row and an extra row each fail, with both sides."""
    check(Case(name="right", expected=({"n": 4001},), **ROUND_ORDER))
    for name, expected in [("wrong value", ({"n": 4002},)), ("missing row", ({"n": 4001}, {"n": 4001})),
                           ("extra row", ())]:
        with pytest.raises(AssertionError, match=r"(?s)round_order::.*expected, not got.*got, not expected") as failure:
            check(Case(name=name, expected=expected, **ROUND_ORDER))
        assert "n=4001" in str(failure.value)


def test_runner_compares_floats_within_a_relative_tolerance():
    case = dict(target="round_order", description="a float", inputs={}, query="select 1.0 / 3 as x")
    check(Case(name="close", expected=({"x": 0.3333333333334},), **case))
    with pytest.raises(AssertionError):
        check(Case(name="off", expected=({"x": 0.33333},), **case))
    with pytest.raises(AssertionError):  # a boolean is not the number 1
        check(Case(name="bool", expected=({"x": True},), **dict(case, query="select 1 as x")))


def test_runner_names_an_input_the_case_does_not_give():
    case = Case(target="int_run_scoring", name="no_benchmarks", description="dim_benchmark is missing",
                inputs={"stg_training_runs": Input(())}, expected=())
    with pytest.raises(CaseError, match="does not give dim_benchmark"):
        check(case)
    typo = Case(target="int_run_scoring", name="typo", description="a column the relation does not have",
                inputs={"stg_training_runs": Input(({"time_to_train": 1.0},)), "dim_benchmark": Input(())}, expected=())
    with pytest.raises(CaseError, match="no column \\['time_to_train'\\]"):
        check(typo)
