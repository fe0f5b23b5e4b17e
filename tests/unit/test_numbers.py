"""One rule for numbers read from logs and CSV cells, with the two options its callers use."""

import math

import pytest

from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf import runs, scorer

CASES = [  # value, as text allowed (run facts), numbers only (events), finite text (catalog cells)
    (12, 12.0, 12.0, 12.0),
    (1.5, 1.5, 1.5, 1.5),
    ("12", 12.0, None, 12.0),
    (" 1e3 ", 1000.0, None, 1000.0),
    ("", None, None, None),
    ("n/a", None, None, None),
    (None, None, None, None),
    (True, None, None, None),
    (False, None, None, None),
    ({"value": 1}, None, None, None),
    ([1], None, None, None),
]


@pytest.mark.parametrize(("value", "text", "numbers_only", "finite"), CASES)
def test_each_mode_reads_numbers_as_its_callers_always_did(value, text, numbers_only, finite):
    assert number_or_none(value) == text
    assert number_or_none(value, text=False) == numbers_only
    assert number_or_none(value, finite=True) == finite


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity", float("nan"), float("inf")])
def test_non_finite_values_pass_unless_finite_is_asked(value):
    assert math.isnan(number_or_none(value)) or math.isinf(number_or_none(value))
    assert number_or_none(value, finite=True) is None


def test_the_parsers_use_the_one_rule():
    assert runs._number is number_or_none
    assert scorer._number.func is number_or_none and scorer._number.keywords == {"text": False}
    assert scorer._number("3") is None and scorer._number(3) == 3.0
