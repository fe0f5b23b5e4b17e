"""Before and after, in one session: cold refreshes of the same rounds with two or more versions of the
code, alternating, each printing its time to the publish, its steps and the CPU it kept busy.

    python benchmarks/refresh_ab.py v4.1 before=89cbae8 after=HEAD
    python benchmarks/refresh_ab.py v4.1 --repeat 3 ours=HEAD 'dagster-storage=HEAD+dagster-storage'
    python benchmarks/refresh_ab.py v0.5,v1.0 --repeat 2 view=HEAD table=/tmp/variant-with-kind-table

A variant is NAME=SOURCE: a git revision (its `pipelines/`, `sql/` and `schemas/` are archived into a
temp folder) or a folder holding those three; `+dagster-storage` runs it on a Dagster home whose
dagster.yaml names Dagster's own SQLite storage (the CLI then leaves it as it is). Each refresh is
`mlperf-warehouse refresh --no-prices --suites training` of this venv with PYTHONPATH on the variant, from file:// copies
of ../shared into an empty temp warehouse. CPU seconds are the whole machine's (/proc/stat: user, nice,
system, irq, softirq), split at the progress line that announces the outputs: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support.paths import SHARED_MLPERF as SHARED  # noqa: E402
from support.shared_build import RULES_TEMPLATE, TRAINING_TEMPLATE  # noqa: E402

CLI = Path(sys.executable).parent / "mlperf-warehouse"
CODE = ("pipelines", "sql", "schemas")
_STEP = re.compile(r"^(results \S+|warehouse|outputs)\s+(ok|warn|failed)\s+([\d.]+)", re.M)


def busy_cpu_seconds() -> float:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return sum(int(fields[i]) for i in (1, 2, 3, 6, 7)) / os.sysconf("SC_CLK_TCK")


def code_folder(source: str, scratch: Path) -> Path:
    if Path(source).is_dir():
        return Path(source).resolve()
    folder = scratch / re.sub(r"[^\w.-]", "_", source)
    if not folder.exists():
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", source, *CODE], capture_output=True, check=True)
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter="data")
    return folder


def refresh(rounds: str, code: Path, scratch: Path, dagster_storage: bool) -> str:
    warehouse = Path(tempfile.mkdtemp(dir=scratch))
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "MLPERF_WAREHOUSE_DIR")}
    env |= {"PYTHONPATH": str(code), "MLPERF_WAREHOUSE_DIR": str(warehouse / "warehouse")}
    if dagster_storage:
        home = warehouse / "dagster-home"
        home.mkdir()
        (home / "dagster.yaml").write_text(f"telemetry:\n  enabled: false\nstorage:\n  sqlite:\n    base_dir: {home}\n")
        env["DAGSTER_HOME"] = str(home)
    started, cpu = time.perf_counter(), busy_cpu_seconds()
    cpu_at_publish = None
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([str(CLI), "refresh", "--no-prices", "--suites", "training", "--rounds", rounds,
                                 "--results-url-template", f"file://{SHARED}{TRAINING_TEMPLATE}",
                                 "--rules-url-template", f"file://{SHARED}{RULES_TEMPLATE}"],
                                env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:
            if "refreshing the outputs" in line:
                cpu_at_publish = busy_cpu_seconds()
        proc.wait()
        cpu_end, wall = busy_cpu_seconds(), time.perf_counter() - started
        out.seek(0)
        stdout = out.read()
    if proc.returncode != 0:
        sys.exit(f"refresh failed with {code}:\n{stdout[-3000:]}")
    published = re.search(r"published after ([\d.]+)s", stdout)
    steps = _STEP.findall(stdout)
    results = sum(float(secs) for name, _, secs in steps if name.startswith("results"))
    others = "; ".join(f"{name} {secs} s" for name, _, secs in steps if not name.startswith("results"))
    cpu_text = (f"CPU to the publish {cpu_at_publish - cpu:.2f} s, outputs {cpu_end - cpu_at_publish:.2f} s"
                if cpu_at_publish is not None else f"CPU {cpu_end - cpu:.2f} s")
    return (f"published after {published.group(1) if published else '?'} s (whole {wall:.2f} s); "
            f"results steps {results:.1f} s; {others}; {cpu_text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", help="comma-separated rounds, e.g. v4.1")
    parser.add_argument("variants", nargs="+", metavar="NAME=SOURCE[+dagster-storage]")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"{SHARED} not found: this benchmark reads the shared archives")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        variants = []
        for spec in args.variants:
            name, _, source = spec.partition("=")
            source, _, option = source.partition("+")
            variants.append((name, code_folder(source, scratch), option == "dagster-storage"))
        print(f"machine: {os.cpu_count()} cores; rounds {args.rounds}; {args.repeat} alternating runs per variant")
        for _ in range(args.repeat):
            for name, code, dagster_storage in variants:
                print(f"{name}: {refresh(args.rounds, code, scratch, dagster_storage)}", flush=True)


if __name__ == "__main__":
    main()
