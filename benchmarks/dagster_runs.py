"""What one `warehouse_job` run costs on a small real warehouse (two staged rounds of two systems,
`tests/support/mini_warehouse.py`), on the CLI's own Dagster instance (`pipelines.runner.instance`), in this
process's CPU seconds: the whole run, the DuckDB build attempt inside it, and the storing of the run's events by
event type (count per run, CPU per run and per event). Each run follows a change to one round's staged rows, so
every run builds, tests and publishes; the first run (imports, the instance's first files) is left out of the
medians. Then the CPU of serializing each of the last run's events once, by type (the redaction serializes every
event, and Dagster again to store it). Opening the instance is timed too: a new home (its SQLite files created)
against an existing one.

Usage: python benchmarks/dagster_runs.py [--runs 6]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dagster-runs-") as scratch:
        base = Path(scratch) / "warehouse"
        base.mkdir()
        os.environ["MLPERF_WAREHOUSE_DIR"] = str(base)
        os.environ.pop("DAGSTER_HOME", None)
        measure(base, Path(scratch), args.runs)


def measure(base: Path, scratch: Path, runs: int) -> None:
    import pipelines.lib.warehouse.build.core as build_core
    import pipelines.runner.instance_storage as storage
    from pipelines.runner.instance import warehouse_instance
    from pipelines.runner.runs import job_resources, run_job
    from pipelines.settings import apply, load_settings
    from support.mini_warehouse import stage_round

    settings = load_settings(suites=["training"], rounds=["v4.1", "v5.0"])
    apply(settings)
    attempts: list[float] = []
    events: list[collections.Counter] = []  # per run: event type → CPU seconds (and "#type" → count)
    last_run: list = []  # the events stored by the last run

    attempt = build_core.build_attempt

    def timed_attempt(*a, **k):
        started = time.process_time()
        try:
            return attempt(*a, **k)
        finally:
            attempts.append(time.process_time() - started)

    store = storage.SqliteEventLogStorageKeepingConnections.store_event

    def timed_store(self, event):
        started = time.process_time()
        try:
            return store(self, event)
        finally:
            kind = event.dagster_event_type.value if event.dagster_event_type else "log message"
            events[-1][kind] += time.process_time() - started
            events[-1]["#" + kind] += 1
            last_run.append((kind, event))

    build_core.build_attempt = timed_attempt
    storage.SqliteEventLogStorageKeepingConnections.store_event = timed_store
    for round_version in ("v4.1", "v5.0"):
        stage_round(base, round_version)
    totals = []
    with warehouse_instance() as instance:
        resources = job_resources(settings)
        for i in range(runs + 1):
            stage_round(base, "v5.0", systems=2 + i % 2)  # other rows: the run builds
            events.append(collections.Counter())
            last_run.clear()
            started = time.process_time()
            result = run_job("warehouse_job", instance, resources)
            totals.append(time.process_time() - started)
            if not result.success:
                sys.exit(f"run {i} failed")
    measured = slice(1, None)
    run_cpu, attempt_cpu = statistics.median(totals[measured]), statistics.median(attempts[measured])
    stored = [sum(v for k, v in e.items() if not k.startswith("#")) for e in events[measured]]
    print(f"warehouse_job on a small warehouse, median of {runs} runs (CPU of this process):")
    print(f"  {run_cpu * 1000:7.0f} ms a run")
    print(f"  {attempt_cpu * 1000:7.0f} ms of it the DuckDB build attempt (models, SQL tests, comments, checkpoint)")
    print(f"  {statistics.median(stored) * 1000:7.0f} ms of it storing the run's events, by type:")
    kinds = sorted({k for e in events[measured] for k in e if not k.startswith("#")},
                   key=lambda k: -statistics.median(e[k] for e in events[measured]))
    for kind in kinds:
        count = statistics.median(e["#" + kind] for e in events[measured])
        spent = statistics.median(e[kind] for e in events[measured])
        print(f"  {spent * 1000:7.0f} ms  {count:4.0f} x {kind} ({spent / count * 1000:.2f} ms each)")
    print(f"  {(run_cpu - attempt_cpu - statistics.median(stored)) * 1000:7.0f} ms the rest (Dagster's execution "
          "around the build, the asset's metadata, the build's other steps)")
    serializing(last_run)
    opening(scratch)


def serializing(stored: list) -> None:
    """CPU of serializing each stored event once (as `serialize_value` does for the redaction and for Dagster's
    row), summed by type: what one of the two serializations costs a run."""
    from dagster._serdes import serialize_value

    spent, count = collections.Counter(), collections.Counter()
    for kind, event in stored:
        started = time.process_time()
        serialize_value(event)
        spent[kind] += time.process_time() - started
        count[kind] += 1
    print(f"serializing the last run's {len(stored)} events once: {sum(spent.values()) * 1000:.0f} ms; "
          + ", ".join(f"{kind} {spent[kind] / count[kind] * 1000:.2f} ms each" for kind, _ in spent.most_common(5)))


def opening(scratch: Path) -> None:
    """CPU of opening the instance (and one query) in a new home and in an existing one, median of 8."""
    from pipelines.runner.instance import warehouse_instance

    def open_once(home: Path) -> float:
        os.environ["DAGSTER_HOME"] = str(home)
        started = time.process_time()
        with warehouse_instance() as instance:
            instance.get_runs(limit=1)
        return time.process_time() - started

    fresh = [open_once(scratch / f"home-{i}") for i in range(8)]
    existing = [open_once(scratch / "home-0") for _ in range(8)]
    print(f"opening the instance: {statistics.median(fresh) * 1000:.0f} ms in a new home (its SQLite files "
          f"created and stamped), {statistics.median(existing) * 1000:.0f} ms in an existing one")


if __name__ == "__main__":
    main()
