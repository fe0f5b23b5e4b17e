"""Where the whole test suite's CPU goes by what the code was doing: README's test command once, with py-spy
sampling each xdist worker (the processes the tests start are not sampled), then the samples' shares: the
refreshes run in the test processes, split into the project's own work inside their Dagster runs and Dagster's
bookkeeping around it; opening each refresh's Dagster instance; test fixtures; the DuckDB calls of the build,
by statement; and the source lines that used most.

Needs py-spy (`pip install py-spy` into any environment; `--py-spy PATH` if it is not on PATH) and the right
to trace the workers (root, or ptrace allowed). Sampling slows the run by about a tenth.

Usage: python benchmarks/suite_profile.py [--rate 40] [--py-spy PATH] [--top 15] [pytest arguments]
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suite_cpu import ROOT, readme_test_command

_LINE = re.compile(r":\d+\)$")


def _workers(master: int) -> list[int]:
    """The xdist workers: the master's child processes (the tests' own processes are the workers' children)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(master):
            found.append(int(status.parent.name))
    return found


def record(py_spy: str, rate: int, out: Path, pytest_args: list[str]) -> tuple[int, float]:
    """Run the suite with py-spy on each worker; the suite's exit code and wall seconds."""
    started = time.monotonic()
    suite = subprocess.Popen([sys.executable, *readme_test_command(), *pytest_args], cwd=ROOT)
    spies, seen = [], set()
    while suite.poll() is None:
        for pid in set(_workers(suite.pid)) - seen:
            seen.add(pid)
            spies.append(subprocess.Popen([py_spy, "record", "-r", str(rate), "--nonblocking", "-f", "raw",
                                           "-o", str(out / f"{pid}.txt"), "--pid", str(pid)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.2)
    for spy in spies:
        spy.wait(timeout=60)
    return suite.returncode, time.monotonic() - started


def stacks(out: Path):
    """(frames, samples) of every sample of every worker, frames root first."""
    for path in out.glob("*.txt"):
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            yield stack.split(";"), int(count)


def _own(frame: str) -> bool:
    return "pipelines/" in frame and "runner/instance_storage.py" not in frame


def report(out: Path, rate: int, top: int) -> None:
    total = 0
    groups: collections.Counter[str] = collections.Counter()
    build_lines: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    for frames, n in stacks(out):
        total += n
        leaves[frames[-1]] += n
        names = [_LINE.sub(")", f) for f in frames]
        runs = next((i for i, f in enumerate(names) if f.startswith("JobDefinition.execute_in_process (")), None)
        if any(f.startswith("refresh (") and "runner/jobs.py" in f for f in names):
            groups["refreshes in the test processes"] += n
        if runs is not None:
            key = "  of which the project's own work in their Dagster runs" if any(map(_own, frames[runs + 1:])) \
                else "  of which Dagster's bookkeeping in their runs (event storage included)"
            groups[key] += n
        elif any(f.startswith("warehouse_instance (") for f in names):
            groups["  of which opening the Dagster instance"] += n
        if any(f.startswith("pytest_fixture_setup (") for f in names):
            groups["fixtures (overlaps the above: the shared build is a refresh)"] += n
        if "build/attempt.py" in frames[-1]:
            build_lines[frames[-1]] += n
    print(f"{total / rate:.0f} s of samples at {rate} Hz in {len(list(out.glob('*.txt')))} workers")
    for key in sorted(groups, key=lambda k: (not k.startswith("refreshes"), not k.startswith("  "))):
        print(f"{100 * groups[key] / total:5.1f}%  {key}")
    print("DuckDB calls of the build (samples in build/attempt.py's own lines):")
    for frame, n in build_lines.most_common(6):
        print(f"{100 * n / total:5.1f}%  {_source(frame)}")
    print(f"the {top} source lines using most (a line that calls into C counts the C work):")
    for frame, n in leaves.most_common(top):
        print(f"{100 * n / total:5.1f}%  {frame}")


def _source(frame: str) -> str:
    """`frame` (`function (path:line)`) with that line's text, for a file of this project."""
    match = re.search(r"\((.+):(\d+)\)$", frame)
    if not match:
        return frame
    path = ROOT / match.group(1) if not match.group(1).startswith("/") else Path(match.group(1))
    try:
        text = path.read_text().splitlines()[int(match.group(2)) - 1].strip()
    except (OSError, IndexError):
        return frame
    return f"{match.group(1)}:{match.group(2)}  {text[:90]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=40, help="samples per second per worker")
    parser.add_argument("--py-spy", default=shutil.which("py-spy"), help="the py-spy executable")
    parser.add_argument("--top", type=int, default=15)
    args, pytest_args = parser.parse_known_args()
    if not args.py_spy:
        sys.exit("py-spy not found: pip install py-spy, or give --py-spy PATH")
    with tempfile.TemporaryDirectory(prefix="suite-profile-") as scratch:
        code, wall = record(args.py_spy, args.rate, Path(scratch), pytest_args)
        print(f"README's test command: exit {code}, {wall:.0f} s wall under the profiler")
        report(Path(scratch), args.rate, args.top)


if __name__ == "__main__":
    main()
