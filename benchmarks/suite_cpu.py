"""Where the whole test suite's time goes: README's test command, run once with this file as a pytest plugin
that records each test's wall time and CPU (its process and the children it waited for: refresh processes,
browsers, UI servers), then printed per module and per xdist worker, with the whole run's wall and CPU and the
machine's speed before and after (`machine_reference`). The machine's own count of busy CPU (Linux's /proc/stat,
every process) is printed beside it: processes nobody waits for (a PostgreSQL server, a browser, the scoring
workers of a refresh run in a test's process) are missing from the waited-for CPU, not from the machine's.

Scoring workers a test's process keeps alive (the refresh's pool) are counted when they end, not per test,
so the per-module figures add up to less than the run's CPU.

`--steps` also counts, in each test process, the refreshes run in it (`pipelines.runner.jobs.refresh`), their
Dagster runs by job and the build attempts (in a refresh or not): how many and their CPU.

`--write-module-seconds` (a whole run only) records each module's wall seconds in tests/module_seconds.json, the
order the suite hands modules to its workers (tests/support/schedule.py).

Usage: python benchmarks/suite_cpu.py [--top 15] [--tests 0] [--tail 0] [--steps] [--write-module-seconds]
                                      [pytest arguments, e.g. -m "not slow"]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_test_command() -> list[str]:
    """The arguments after the interpreter of README.md's test command (`.venv/bin/python -m pytest ...`)."""
    line = next(line for line in (ROOT / "README.md").read_text().splitlines()
                if line.startswith(".venv/bin/python -m pytest"))
    return line.split()[1:]


def machine_reference() -> float:
    """CPU seconds of a fixed piece of pure-Python work (20 million loop steps). The shared machine's speed moves by
    a third from hour to hour; printed before and after a run, it says which figures of different runs compare."""
    started = time.process_time()
    total = 0
    for i in range(20_000_000):
        total += i * i % 7
    return time.process_time() - started


_OUT = "SUITE_CPU_DIR"  # where the plugin writes one JSON line per test, one file per xdist worker


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


_records = None
_STEPS = "SUITE_CPU_STEPS"  # set: the plugin also counts refreshes, Dagster runs and build attempts


def _counted(module, name: str, label) -> None:
    """`module.name` replaced by a function that records its CPU (this process's) under `label(args)`."""
    original = getattr(module, name)
    out = Path(os.environ[_OUT]) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.steps"

    def counted(*args, **kwargs):
        started = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            with out.open("a") as f:
                f.write(json.dumps([label(args), time.process_time() - started]) + "\n")

    setattr(module, name, counted)


def pytest_configure(config):  # the plugin: in each pytest process
    if not os.environ.get(_STEPS):
        return
    import pipelines.lib.warehouse.build.core as build_core
    import pipelines.runner.jobs as jobs
    import pipelines.runner.price_steps as price_steps

    _counted(jobs, "_refresh", lambda args: "refresh")
    for module in (jobs, price_steps):  # each imported run_job by name
        _counted(module, "run_job", lambda args: f"run of {args[0]}")
    _counted(build_core, "build_attempt", lambda args: "build attempt")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # the plugin: pytest calls it around each test
    global _records
    if _records is None:
        _records = open(Path(os.environ[_OUT]) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl", "a")
    cpu, wall = _cpu(), time.perf_counter()
    yield
    _records.write(json.dumps({"id": item.nodeid, "cpu": _cpu() - cpu, "wall": time.perf_counter() - wall,
                               "ended": time.time()}) + "\n")
    _records.flush()



def machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has been busy since boot, all cores (user, nice, system, interrupts, steal:
    /proc/stat's first line); None where there is no /proc/stat."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="modules to list (default 15)")
    parser.add_argument("--tests", type=int, default=0, help="also list the tests using most CPU (default none)")
    parser.add_argument("--tail", type=int, default=0,
                        help="also list each worker's last modules, with when each ended (default none)")
    parser.add_argument("--steps", action="store_true",
                        help="also count the refreshes, Dagster runs and build attempts in the test processes")
    parser.add_argument("--write-module-seconds", action="store_true",
                        help="record each module's wall seconds for the suite's order (whole runs only)")
    args, pytest_args = parser.parse_known_args()
    if args.write_module_seconds and pytest_args:
        parser.error("--write-module-seconds records a whole run: give no pytest arguments")
    reference_before = machine_reference()
    with tempfile.TemporaryDirectory() as out:
        env = os.environ | {_OUT: out, _STEPS: "1" if args.steps else "", "PYTHONPATH": os.pathsep.join(
            filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))}
        started, started_at, busy_before = time.perf_counter(), time.time(), machine_busy_seconds()
        done = subprocess.run([sys.executable, *readme_test_command(), "-p", Path(__file__).stem, *pytest_args],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        busy_after = machine_busy_seconds()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        workers = {p.stem: [json.loads(line) for line in p.open()] for p in Path(out).glob("*.jsonl")}
        steps = [json.loads(line) for p in Path(out).glob("*.steps") for line in p.open()]
    lines = done.stdout.strip().splitlines()
    for line in lines:  # pytest's short summary: which tests failed
        if line.startswith(("FAILED ", "ERROR ")):
            print(line)
    print(lines[-1] if lines else done.stderr[-2000:])
    print(f"whole run: {wall:.0f} s wall, {usage.ru_utime + usage.ru_stime:.0f} s CPU (user + sys); exit {done.returncode}")
    if busy_before is not None and busy_after is not None:
        busy, cores = busy_after - busy_before, os.cpu_count() or 1
        print(f"the machine's busy CPU in that time (every process): {busy:.0f} s of {wall * cores:.0f} s on {cores} "
              f"cores, {busy / wall:.2f} cores busy on average")
    print(f"machine reference: {reference_before:.2f} s before the run, {machine_reference():.2f} s after (the same "
          "work each time: a higher figure is a slower machine)")
    for name, rows in sorted(workers.items()):
        print(f"worker {name}: {len(rows)} tests, busy {sum(r['wall'] for r in rows):.0f} s, "
              f"CPU in its tests {sum(r['cpu'] for r in rows):.0f} s")
    cpu, wall_by_module = collections.Counter(), collections.Counter()
    for rows in workers.values():
        for r in rows:
            module = r["id"].split("::")[0]
            cpu[module] += r["cpu"]
            wall_by_module[module] += r["wall"]
    print(f"CPU in tests {sum(cpu.values()):.0f} s; the {args.top} modules using most (CPU s, wall s):")
    for module, seconds in cpu.most_common(args.top):
        print(f"  {seconds:6.1f} {wall_by_module[module]:6.1f}  {module}")
    if args.tests:
        print(f"the {args.tests} tests using most (CPU s, wall s):")
        for r in sorted((r for rows in workers.values() for r in rows), key=lambda r: -r["cpu"])[:args.tests]:
            print(f"  {r['cpu']:6.1f} {r['wall']:6.1f}  {r['id']}")
    if args.tail:
        print(f"each worker's last {args.tail} modules (ended at s after the start, wall s in them):")
        for name, rows in sorted(workers.items()):
            runs = []  # consecutive tests of one module
            for r in rows:
                module = r["id"].split("::")[0]
                if runs and runs[-1][0] == module:
                    runs[-1][1] = r["ended"]
                    runs[-1][2] += r["wall"]
                else:
                    runs.append([module, r["ended"], r["wall"]])
            print(f"  {name}: " + "; ".join(f"{m.rsplit('/', 1)[-1]} {e - started_at:.0f} ({w:.0f})"
                                              for m, e, w in runs[-args.tail:]))
    if args.steps:
        count, spent = collections.Counter(), collections.Counter()
        for label, seconds in steps:
            count[label] += 1
            spent[label] += seconds
        print("in the test processes (their own CPU; a refresh's runs and attempts are counted in it too):")
        for label, seconds in spent.most_common():
            print(f"  {seconds:6.1f} s  {count[label]:4d} x {label} ({seconds / count[label]:.2f} s each)")
    if args.write_module_seconds:
        if done.returncode != 0:
            print("not recorded: the run failed")
        else:
            sys.path.insert(0, str(ROOT / "tests"))
            from support.schedule import MODULE_SECONDS

            MODULE_SECONDS.write_text(json.dumps({m: round(s, 1) for m, s in sorted(wall_by_module.items())},
                                                 indent=1) + "\n", encoding="utf-8")
            print(f"recorded {len(wall_by_module)} modules' wall seconds in {MODULE_SECONDS.relative_to(ROOT)}")
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
