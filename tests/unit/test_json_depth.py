"""The nesting-depth guard every JSON document passes before it is parsed: right on escapes and strings, and
linear in its input (one hostile log line must not stall a refresh)."""

import time

import pytest

from pipelines.lib.io.jsonsafe import JSONTooDeep, check_depth, json_depth_over, loads_bounded


@pytest.mark.parametrize(("text", "over"), [
    ('{"a": "x\\"y", "b": [[1]]}', True),  # an escaped quote does not end its string
    ('[["\\\\"], [2]]', False),  # an escaped backslash before a closing quote does
    ('{"k": "[[[[[[[[[["}', False),  # brackets inside a string do not nest
    ('[[[]]]', True),
])
def test_depth_outside_strings(text, over):
    assert json_depth_over(text, 2) is over


def _best_scan_seconds(n: int, tries: int) -> float:
    """The shortest of `tries` scans of an unterminated string of `n` escaped quotes behind 300 brackets (the
    shortest: a pause of the machine is no property of the guard)."""
    text = "[" * 300 + '"' + '\\"' * n
    best = float("inf")
    for _ in range(tries):
        started = time.perf_counter()
        assert json_depth_over(text, 256)
        best = min(best, time.perf_counter() - started)
    return best


def test_the_guard_is_linear_on_an_unterminated_string_of_escaped_quotes():
    # The base input grows until a scan takes 50 ms: below that, CPU caches and the timer, not the guard, set
    # the ratio (a scan of 200,000 quotes fits in cache and takes 2 ms, eight times as many took 22 times as long).
    n = 400_000
    while _best_scan_seconds(n, 1) < 0.05 and n < 8_000_000:
        n *= 2
    base, four_times = _best_scan_seconds(n, 3), _best_scan_seconds(4 * n, 3)
    # four times the input: a linear scan takes about 4 times as long, a quadratic one 16 times
    assert four_times < 10 * base, (n, base, four_times)
    with pytest.raises(JSONTooDeep):
        check_depth("[" * 300 + "]" * 300, 256)
    assert loads_bounded('{"a": [1, "]"]}') == {"a": [1, "]"]}


@pytest.mark.parametrize(("text", "why"), [
    ('{"scaling_factor": 0.5}', "outside [1.0, 100.0]"),  # the checker never writes a factor below 1
    ('{"scaling_factor": 1e4}', "outside [1.0, 100.0]"),
    ('{"scaling_factor": 1e309}', "not a finite number"),
    ('{"scaling_factor": true}', "not a finite number"),
])
def test_a_scaling_factor_out_of_bounds_leaves_its_folder_unscored_with_the_reason(text, why):
    from pipelines.lib.mlperf.archive import Member
    from pipelines.lib.mlperf.round_parser import RoundTables, add_benchmark_json

    tables = RoundTables()
    row = add_benchmark_json(tables, "v9.9", Member("Acme/results/box/ssd/scaling.json", text.encode()), "Acme",
                             "box", "ssd")
    # the row stays (the folder has a scaling.json: no score, never the factor 1 of a folder without one)
    assert row["scaling_factor"] is None and why in row["scaling_problem"]
    assert [q["reason"] for q in tables.quarantine] == [row["scaling_problem"]]
