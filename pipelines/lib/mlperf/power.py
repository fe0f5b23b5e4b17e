"""Power logs of MLPerf Training power submissions (v4.0 on), as data.

A power result has, beside each `result_<n>.txt`, a folder `power/result_<n>/` of `node_*.txt` (readings
of every node's power meter) and `sw_*.txt` (the interconnect's estimated power) MLLOG files. The official
scorer (`mlperf_logging.result_summarizer`) turns them into an energy per run, in joules, given the run's
time to train (ms):

    node:   conversion_eff × Σ power_reading·Δt × time_to_train / (stop − start) / 1000
    switch: conversion_eff × interconnect_power_est × time_to_train / 1000

and the energy of a result is the olympic average over the runs of its score, times the scaling factor.
Releases read a node log differently (`PowerSemantics`): 4.0 reads the file in order, stops at
`power_measurement_stop` and takes the later of the stop and the last reading as the window's end; 4.1 and
later sort by time, count readings between start and stop only, and take the last reading when the stop is
missing. A switch log with no `conversion_eff` crashes 4.0's scorer; here it is 1.0, as the node function
fills it, and flagged; one with no `interconnect_power_est` adds 0 W, as every release counts it, flagged.
Each file becomes one row of what it holds (`summarize`); the SQL multiplies by the run's time to train.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.lib.mlperf.mllog import MLLOG, parse_log
from pipelines.lib.mlperf.rounds import round_sort_key

POWER_FILE = re.compile(r"^(node|sw)_[^/]*\.txt$")


@dataclass(frozen=True)
class PowerSemantics:
    """How a release reads a node log (see the module docstring)."""

    release: str
    sorted_window: bool  # 4.1+: sort by time; readings only between start and stop; missing stop: last reading


SEMANTICS_4_0 = PowerSemantics("4.0", sorted_window=False)
SEMANTICS_4_1 = PowerSemantics("4.1", sorted_window=True)


def semantics_for_round(round_version: str) -> PowerSemantics:
    """The power rules of the release a round was scored with (v4.0: its own 4.0 release; later: 4.1's,
    unchanged through today's package)."""
    return SEMANTICS_4_0 if round_sort_key(round_version) <= (4, 0) else SEMANTICS_4_1


def is_power_file(below: list[str]) -> bool:
    """`<benchmark>/power/<result>/(node|sw)_*.txt`, the path below the system folder."""
    return len(below) == 4 and below[1] == "power" and bool(POWER_FILE.match(below[3]))


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def summarize(data: bytes, kind: str, semantics: PowerSemantics) -> dict:
    """One power log → what the energy needs and what went wrong, as one row:
    node: agg_power_w_ms (Σ P·Δt), window_start_ms, window_stop_ms, conversion_eff;
    switch: conversion_eff, interconnect_power_est_w. `problems` lists the quirks met ('; '-joined)."""
    parsed = parse_log(data, MLLOG)
    lines = parsed.lines
    problems: list[str] = []
    if parsed.errors:
        problems.append(f"{len(parsed.errors)} line(s) that do not parse, skipped")
    row: dict = {"kind": kind, "log_lines": len(lines), "readings": 0, "null_readings": 0, "hosts": 0,
                 "measurement_type": None, "conversion_eff": None, "conversion_eff_logged": False,
                 "interconnect_power_est_w": None, "window_start_ms": None, "window_stop_ms": None,
                 "stop_logged": False, "agg_power_w_ms": None, "first_reading_ms": None, "last_reading_ms": None}
    for line in lines:
        if line.key == "conversion_eff":
            metadata = line.value.get("metadata") if isinstance(line.value, dict) else None
            if isinstance(metadata, dict) and metadata.get("measurement_type"):
                row["measurement_type"] = str(metadata["measurement_type"])
    if kind == "sw":
        for line in lines:  # both releases: the last efficiency before the first estimate
            if line.key == "conversion_eff" and _number(line.value["value"]) is not None:
                row["conversion_eff"], row["conversion_eff_logged"] = _number(line.value["value"]), True
            if line.key == "interconnect_power_est":
                row["interconnect_power_est_w"] = _number(line.value["value"])
                if row["interconnect_power_est_w"] is None:
                    problems.append(f"interconnect_power_est is not a number ({line.value['value']!r})")
                break
        if row["interconnect_power_est_w"] is None and not any("interconnect" in p for p in problems):
            problems.append("no interconnect_power_est: counted as 0 W, as the official scorer does")
        if not row["conversion_eff_logged"]:
            row["conversion_eff"] = 1.0
            problems.append("no conversion_eff: 1.0 assumed")
        row["readings"] = sum(1 for line in lines if line.key == "power_reading")
        row["problems"] = "; ".join(problems) or None
        return row
    _node(lines, semantics, row, problems)
    row["problems"] = "; ".join(problems) or None
    return row


def _node(lines: list, semantics: PowerSemantics, row: dict, problems: list[str]) -> None:
    hosts: set[str] = set()
    start = stop = None
    prev = 0.0
    agg = 0.0
    last = 0.0
    eff = 1.0
    if semantics.sorted_window:
        ordered = sorted(lines, key=lambda line: line.timestamp)
        started = stopped = False
        for line in ordered:
            if line.key == "power_measurement_start":
                start, prev, started = line.timestamp, line.timestamp, True
            if line.key == "power_reading" and not stopped and started:
                agg, prev, last = _reading(line, agg, prev, last, row, hosts)
            if line.key == "power_measurement_stop":
                stop, stopped = line.timestamp, True
            if line.key == "conversion_eff" and _number(line.value["value"]) is not None:
                eff, row["conversion_eff_logged"] = _number(line.value["value"]), True
        if start is None:
            problems.append("no power_measurement_start")
        if stop is None:
            problems.append("no power_measurement_stop: the last reading ends the window")
        window_stop = stop if stop is not None else last
    else:
        for line in lines:
            if line.key == "power_measurement_start":
                start, prev = line.timestamp, line.timestamp
            if line.key == "power_reading":
                agg, prev, last = _reading(line, agg, prev, last, row, hosts)
            if line.key == "power_measurement_stop":
                stop = line.timestamp
                break
            if line.key == "conversion_eff" and _number(line.value["value"]) is not None:
                eff, row["conversion_eff_logged"] = _number(line.value["value"]), True
        if start is None:
            problems.append("no power_measurement_start")
        window_stop = max(stop or 0.0, last)
        if stop is not None and stop <= (start or 0.0) < last:
            problems.append("power_measurement_stop at the start: the last reading ends the window")
    if not row["conversion_eff_logged"]:
        problems.append("no conversion_eff: 1.0 assumed")
    if start is not None and window_stop <= start:
        problems.append("the measurement window has no length")
    row.update(conversion_eff=eff, agg_power_w_ms=agg, window_start_ms=start, window_stop_ms=window_stop,
               stop_logged=stop is not None, hosts=len(hosts))


def _reading(line, agg: float, prev: float, last: float, row: dict, hosts: set[str]) -> tuple[float, float, float]:
    value = _number(line.value["value"])
    metadata = line.value.get("metadata") if isinstance(line.value, dict) else None
    if isinstance(metadata, dict) and metadata.get("host") is not None:
        hosts.add(str(metadata["host"]))
    if value is None:  # "null" and the like: no reading; the next one covers the gap
        row["null_readings"] += 1
        return agg, prev, last
    row["readings"] += 1
    row["first_reading_ms"] = line.timestamp if row["first_reading_ms"] is None else row["first_reading_ms"]
    row["last_reading_ms"] = max(row["last_reading_ms"] or line.timestamp, line.timestamp)
    return agg + value * (line.timestamp - prev), line.timestamp, max(last, line.timestamp)


def energy_j(row: dict, time_to_train_ms: float) -> float | None:
    """The energy one power log adds to a run of `time_to_train_ms`, in joules, as the official scorer
    computes it; None when the log cannot give one."""
    if row["kind"] == "sw":  # no estimate: 0 W, as the official scorer counts it
        return row["conversion_eff"] * (row["interconnect_power_est_w"] or 0.0) * time_to_train_ms / 1000
    start, stop = row["window_start_ms"], row["window_stop_ms"]
    if start is None or stop is None or stop <= start:
        return None
    return row["conversion_eff"] * row["agg_power_w_ms"] * time_to_train_ms / (stop - start) / 1000
