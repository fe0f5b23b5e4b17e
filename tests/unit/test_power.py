"""Power logs read as each release reads them, quirks kept as data (pipelines/lib/mlperf/power.py)."""

import json

import pytest

from pipelines.lib.mlperf.power import (
    SEMANTICS_4_0,
    SEMANTICS_4_1,
    energy_j,
    is_power_file,
    semantics_for_round,
    summarize,
)


def log(*events) -> bytes:
    lines = []
    for time_ms, key, value, metadata in events:
        lines.append(":::MLLOG " + json.dumps({"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME",
                                               "key": key, "value": value, "metadata": metadata or {}}))
    return ("\n".join(lines) + "\n").encode()


NODE = log(
    (1000, "power_measurement_start", None, None),
    (1000, "conversion_eff", 0.9, {"measurement_type": "AC"}),
    (2000, "power_reading", 100.0, {"host": "n0"}),
    (3000, "power_reading", 200.0, {"host": "n0"}),
    (5000, "power_reading", 100.0, {"host": "n0"}),
    (5000, "power_measurement_stop", None, None),
)


def test_a_node_log_gives_the_official_energy():
    row = summarize(NODE, "node", SEMANTICS_4_1)
    # Σ P·Δt = 100·1000 + 200·1000 + 100·2000 = 500,000 W·ms over a 4,000 ms window
    assert row["agg_power_w_ms"] == 500_000 and (row["window_start_ms"], row["window_stop_ms"]) == (1000, 5000)
    assert row["measurement_type"] == "AC" and row["hosts"] == 1 and row["problems"] is None
    # a run of 8,000 ms: 0.9 × 500,000 × 8,000 / 4,000 / 1000 = 900 J (125 W mean, 0.9 efficiency, 8 s)
    assert energy_j(row, 8000) == pytest.approx(900.0)


def test_releases_read_a_node_log_differently():
    # out of order, a reading after the stop, and a stop at the start (v4.0's 1,140 node logs)
    data = log((1000, "power_measurement_start", None, None), (1000, "power_measurement_stop", None, None),
               (3000, "power_reading", 100.0, None), (2000, "power_reading", 100.0, None))
    v40, v41 = summarize(data, "node", SEMANTICS_4_0), summarize(data, "node", SEMANTICS_4_1)
    # 4.0: file order, stops at the stop line: no reading counted; the window ends at the last reading (none)
    assert v40["agg_power_w_ms"] == 0 and v40["window_stop_ms"] == 1000
    # 4.1: sorted, only readings between start and stop: none either, and the window has no length
    assert v41["window_stop_ms"] == 1000 and energy_j(v41, 5000) is None
    assert "no length" in v41["problems"]
    starts_late = log((1000, "power_measurement_start", None, None), (2000, "power_reading", 50.0, None),
                      (4000, "power_reading", 50.0, None))
    assert summarize(starts_late, "node", SEMANTICS_4_1)["window_stop_ms"] == 4000  # no stop: the last reading
    assert "no power_measurement_stop" in summarize(starts_late, "node", SEMANTICS_4_1)["problems"]


def test_quirks_are_data_not_crashes():
    nulls = log((0, "power_measurement_start", None, None), (1000, "power_reading", "null", None),
                (2000, "power_reading", 10.0, None), (2000, "power_measurement_stop", None, None))
    row = summarize(nulls, "node", SEMANTICS_4_1)
    assert row["null_readings"] == 1 and row["readings"] == 1 and row["agg_power_w_ms"] == 10.0 * 2000
    switch = summarize(log((0, "power_reading", 5.0, None)), "sw", SEMANTICS_4_0)
    assert switch["conversion_eff"] == 1.0 and "no conversion_eff" in switch["problems"]
    assert "no interconnect_power_est" in switch["problems"] and energy_j(switch, 1000) == 0.0
    est = summarize(log((0, "conversion_eff", 0.95, None), (0, "interconnect_power_est", 2000.0, None)), "sw", SEMANTICS_4_1)
    assert energy_j(est, 60_000) == pytest.approx(0.95 * 2000 * 60)
    assert summarize(b"not a log\n:::MLLOG {broken\n", "node", SEMANTICS_4_1)["problems"]


def test_power_files_and_releases():
    assert is_power_file(["bert", "power", "result_0", "node_3.txt"])
    assert is_power_file(["bert", "power", "result_0", "sw_0.txt"])
    assert not is_power_file(["bert", "power", "result_0", "notes.txt"])
    assert not is_power_file(["bert", "result_0.txt"])
    assert semantics_for_round("v4.0") is SEMANTICS_4_0 and semantics_for_round("v6.1") is SEMANTICS_4_1
