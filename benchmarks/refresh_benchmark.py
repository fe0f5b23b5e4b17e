"""Time a full refresh against the official scorer, and print peak memory.

Serves ../shared/mlperf over HTTP on 127.0.0.1 and runs `mlperf-warehouse refresh` in a
subprocess (so its peak RSS is measurable) into a scratch warehouse:
  1. one round cold (fetch + parse + build + publish), and the official scorer on a scratch
     extraction of the same archive (it rewrites scaling.json files, so never on real data);
  2. all shared rounds cold;
  3. all shared rounds again with nothing changed upstream.
Usage: python benchmarks/refresh_benchmark.py [--round v4.1] [--skip-official]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "mlperf"
sys.path.insert(0, str(ROOT / "tests"))

from support.http_server import LoopbackServer  # noqa: E402

# Runs the command in a fresh wrapper process, so the peak RSS is this command's alone.
_MEASURE = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
    "print('PEAK_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r.returncode)"
)


def run(cmd: list[str], env: dict | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (MB, the largest single process) of a command."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    peak_kb = int(done.stderr.rsplit("PEAK_KB", 1)[1].split()[0])
    return seconds, peak_kb // 1024


def official_scorer(round_version: str, scratch: Path) -> float:
    archive = SHARED / f"training_results_{round_version}-main.tar.gz"
    with tarfile.open(archive) as tar:
        tar.extractall(scratch, filter="data")
    top = next(scratch.iterdir())
    ruleset = round_version.lstrip("v") + ".0"
    seconds, _ = run([sys.executable, "-m", "mlperf_logging.result_summarizer", f"{top}/{{*}}", "training", ruleset,
                      "-csv", str(scratch / "summary.csv")])
    return seconds


def refresh(rounds: list[str], url: str, warehouse: Path) -> tuple[float, int]:
    env = os.environ | {"MLPERF_WAREHOUSE_DIR": str(warehouse)}
    return run([str(Path(sys.executable).parent / "mlperf-warehouse"), "refresh", "--no-prices",
                "--rounds", ",".join(rounds), "--results-url-template", f"{url}/training_results_{{version}}-main.tar.gz",
                "--rules-url-template", f"{url}/logging/logging-{{ref}}.tar.gz"], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round", default="v4.1,v2.1", help="rounds compared with the official scorer, one by one")
    parser.add_argument("--skip-official", action="store_true")
    args = parser.parse_args()
    rounds = sorted(p.name.split("_")[2].split("-")[0] for p in SHARED.glob("training_results_v*.tar.gz"))
    print(f"machine: {os.cpu_count()} cores; rounds: {', '.join(rounds)}")
    with LoopbackServer(SHARED) as server, tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for round_version in args.round.split(","):
            one, one_mb = refresh([round_version], server.url, tmp / f"one-{round_version}")
            print(f"refresh {round_version} (cold, over HTTP, into an empty warehouse): {one:.1f} s, peak RSS {one_mb} MB")
            if not args.skip_official:
                scratch = tmp / f"scratch-{round_version}"
                scratch.mkdir()
                official = official_scorer(round_version, scratch)
                print(f"official scorer {round_version}: {official:.1f} s; speed-up {official / one:.1f}x")
        cold, cold_mb = refresh(rounds, server.url, tmp / "all")
        print(f"refresh all {len(rounds)} rounds (cold): {cold:.1f} s, peak RSS {cold_mb} MB")
        warm, warm_mb = refresh(rounds, server.url, tmp / "all")
        print(f"refresh all {len(rounds)} rounds (nothing changed upstream): {warm:.1f} s, peak RSS {warm_mb} MB")


if __name__ == "__main__":
    main()
