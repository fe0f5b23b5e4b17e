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


def test_the_guard_is_linear_on_an_unterminated_string_of_escaped_quotes():
    times = []
    for n in (200_000, 1_600_000):
        text = "[" * 300 + '"' + '\\"' * n
        best = float("inf")
        for _ in range(3):  # the best of three: a pause of the machine is no property of the guard
            started = time.perf_counter()
            assert json_depth_over(text, 256)
            best = min(best, time.perf_counter() - started)
        times.append(best)
    # eight times the input: a linear scan takes about 8 times as long, a quadratic one 64 times
    assert times[1] < 2.0 and times[1] < 20 * max(times[0], 1e-3), times
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
