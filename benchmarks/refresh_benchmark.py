"""Time the refresh against the official scorer, and print peak memory, all in one run.

Serves ../shared/mlperf and the shared price lists over HTTP on 127.0.0.1 and runs `mlperf-warehouse
refresh` in a subprocess (so its wall time includes interpreter and Dagster start-up, and its peak RSS is
measurable) into scratch warehouses:
  1. each round of --round cold into an empty warehouse, without prices: download, rules, parse,
     validation, build and publish (what the speed-up is computed on), with the CPU-seconds of each step
     (the whole machine's busy time between the step lines the refresh prints: run it on an idle
     machine), then the outputs (Parquet export and report), timed apart; and the official scorer on a
     scratch extraction of the same archive (it rewrites scaling.json files, so never on real data);
  2. every shared Training and HPC round with the price lists cold into one empty warehouse;
  3. the same again with nothing changed upstream (the pre-flight answers, no Dagster run);
  4. the same with --full (every job runs on the instance; nothing is downloaded, parsed or rebuilt);
  5. the results site of every round (`mlperf-warehouse site`).
Usage: python benchmarks/refresh_benchmark.py [--round v4.1] [--skip-official]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.github import serve_logging_repository  # noqa: E402
from support.http_server import LoopbackServer  # noqa: E402
from support.paths import SHARED_MLPERF as SHARED  # noqa: E402
from support.price_site import PRICE_URL_VARIABLES, serve_fixtures  # noqa: E402
from support.shared_build import (  # noqa: E402
    HPC_TEMPLATE,
    RULES_TEMPLATE,
    TRAINING_TEMPLATE,
    shared_hpc_rounds,
    shared_rounds,
)

_STEP_LINE = re.compile(r"^\[\d+/\d+\] (\S+): fetching|^(prices): fetching|^(building) and publishing|^refreshing the (outputs)")

# Runs the command in a fresh wrapper process, so the peak RSS is this command's alone (the largest
# single process of its tree: the refresh or one of its parse workers).
_MEASURE = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr); "
    "print('PEAK_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r.returncode)"
)
_OUTPUTS = re.compile(r"published after ([\d.]+)s, then outputs ([\d.]+)s")


def run(cmd: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (MB) and stdout of a command."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    peak_kb = int(done.stderr.rsplit("PEAK_KB", 1)[1].split()[0])
    return seconds, peak_kb // 1024, done.stdout


def scorer_python(scratch: Path) -> str:
    """An interpreter that runs mlperf-logging's own scorer: this one when its dependencies are installed, else
    a scratch venv with the same mlperf-logging release and them (requirements.lock leaves pandas, numpy and
    scipy out: the warehouse reads that package as data and never runs it)."""
    if importlib.util.find_spec("pandas") is not None:
        return sys.executable
    venv = scratch / "scorer-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"mlperf-logging=={metadata.version('mlperf-logging')}"],
                   check=True)
    return str(python)


def official_scorer(round_version: str, scratch: Path, python: str) -> float:
    archive = SHARED / f"training_results_{round_version}-main.tar.gz"
    with tarfile.open(archive) as tar:
        tar.extractall(scratch, filter="data")
    top = next(scratch.iterdir())
    ruleset = round_version.lstrip("v") + ".0"
    seconds, _, _ = run([python, "-m", "mlperf_logging.result_summarizer", f"{top}/{{*}}", "training", ruleset,
                         "-csv", str(scratch / "summary.csv")])
    return seconds


def _busy_seconds() -> float:
    """CPU time the whole machine has spent busy since boot (every core), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _env(warehouse: Path, prices_url: str | None) -> dict:
    env = os.environ | {"MLPERF_WAREHOUSE_DIR": str(warehouse)}
    env.pop("DAGSTER_HOME", None)  # the instance under the scratch warehouse
    if prices_url:
        env |= {variable: prices_url for variable in PRICE_URL_VARIABLES} | {"MLPERF_GCP_API_KEY": "benchmark-key"}
    return env


def _refresh_cmd(rounds: list[str], url: str, prices: bool, *extra: str) -> list[str]:
    return [str(Path(sys.executable).parent / "mlperf-warehouse"), "refresh", *([] if prices else ["--no-prices"]),
            "--rounds", ",".join(rounds),
            "--results-url-template", url + TRAINING_TEMPLATE, "--rules-url-template", url + RULES_TEMPLATE, *extra]


def _timed_refresh(cmd: list[str], env: dict) -> tuple[float, int, float]:
    """Wall seconds, peak RSS (MB) and the seconds of the outputs that follow a publish (0 if none)."""
    seconds, peak, out = run(cmd, env)
    found = _OUTPUTS.search(out)
    return seconds, peak, float(found.group(2)) if found else 0.0


def refresh(rounds: list[str], url: str, warehouse: Path, *extra: str,
            prices_url: str | None = None) -> tuple[float, int, float]:
    """`refresh` of Training `rounds`."""
    return _timed_refresh(_refresh_cmd(rounds, url, prices_url is not None, *extra), _env(warehouse, prices_url))


def refresh_all(training: list[str], hpc: list[str], url: str, warehouse: Path, prices_url: str,
                *extra: str) -> tuple[float, int, float]:
    """`refresh` of every shared Training and HPC round (the configured rounds of both suites), with prices."""
    env = _env(warehouse, prices_url) | {
        "MLPERF_SUITES": "training,hpc", "MLPERF_ROUNDS": ",".join(training), "MLPERF_HPC_ROUNDS": ",".join(hpc),
        "MLPERF_RESULTS_URL_TEMPLATE": url + TRAINING_TEMPLATE,
        "MLPERF_HPC_RESULTS_URL_TEMPLATE": url + HPC_TEMPLATE,
        "MLPERF_RULES_URL_TEMPLATE": url + RULES_TEMPLATE}
    return _timed_refresh([str(Path(sys.executable).parent / "mlperf-warehouse"), "refresh", *extra], env)


def refresh_steps(rounds: list[str], url: str, warehouse: Path) -> list[tuple[str, float, float]]:
    """A refresh whose progress lines are read as they come: (step, wall s, machine CPU s) per step, the
    start-up before the first step line included as 'start-up'."""
    started, busy = time.perf_counter(), _busy_seconds()
    proc = subprocess.Popen(_refresh_cmd(rounds, url, False), env=_env(warehouse, None), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    steps, current = [], "start-up"
    for line in proc.stderr:
        found = _STEP_LINE.match(line.strip())
        if found:
            now, cpu = time.perf_counter(), _busy_seconds()
            steps.append((current, now - started, cpu - busy))
            started, busy, current = now, cpu, next(g for g in found.groups() if g)
    proc.wait()
    steps.append((current, time.perf_counter() - started, _busy_seconds() - busy))
    if proc.returncode != 0:
        sys.exit(f"refresh failed: {proc.stdout.read()[-2000:]}")
    return steps


def site(warehouse: Path, out: Path) -> tuple[float, int]:
    seconds, peak, _ = run([str(Path(sys.executable).parent / "mlperf-warehouse"), "site", "--out", str(out)],
                           _env(warehouse, None))
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round", default="v4.1", help="rounds compared with the official scorer, one by one")
    parser.add_argument("--skip-official", action="store_true")
    args = parser.parse_args()
    rounds, hpc_rounds = shared_rounds(), shared_hpc_rounds()
    print(f"machine: {os.cpu_count()} cores; Training rounds: {', '.join(rounds)}; HPC rounds: {', '.join(hpc_rounds)}")
    peaks = []
    with LoopbackServer(SHARED) as server, LoopbackServer() as prices, tempfile.TemporaryDirectory() as tmp:
        serve_fixtures(prices)
        serve_logging_repository(server)  # GitHub's API for the rules releases of rounds rules_refs.csv lacks
        os.environ["MLPERF_GITHUB_API_URL"] = server.url  # every refresh's environment starts from this one
        tmp = Path(tmp)
        scorer = None if args.skip_official else scorer_python(tmp)
        for round_version in args.round.split(","):
            steps = refresh_steps([round_version], server.url, tmp / f"steps-{round_version}")
            print(f"refresh {round_version} cold, by step (wall s / machine CPU s): " + "; ".join(
                f"{name} {wall:.2f} / {cpu:.2f}" for name, wall, cpu in steps))
            whole, mb, outputs = refresh([round_version], server.url, tmp / f"one-{round_version}")
            peaks.append(mb)
            published = whole - outputs
            print(f"refresh {round_version} cold (empty warehouse, over HTTP): published after {published:.2f} s "
                  f"(start-up, download, rules, parse, validation, build, publish); then outputs (export + report) "
                  f"{outputs:.2f} s; whole command {whole:.2f} s; peak RSS {mb} MB")
            if not args.skip_official:
                scratch = tmp / f"scratch-{round_version}"
                scratch.mkdir()
                official = official_scorer(round_version, scratch, scorer)
                print(f"official scorer {round_version}: {official:.1f} s; speed-up to publish "
                      f"{official / published:.1f}x (whole command {official / whole:.1f}x)")
        every = f"{len(rounds)} Training and {len(hpc_rounds)} HPC rounds"
        cold, cold_mb, cold_outputs = refresh_all(rounds, hpc_rounds, server.url, tmp / "all", prices.url)
        peaks.append(cold_mb)
        print(f"refresh of all {every} with the price lists, cold: published after {cold - cold_outputs:.1f} s; "
              f"then outputs {cold_outputs:.1f} s; whole command {cold:.1f} s; peak RSS {cold_mb} MB")
        warm, warm_mb, _ = refresh_all(rounds, hpc_rounds, server.url, tmp / "all", prices.url)
        print(f"the same, nothing changed upstream: {warm:.2f} s, peak RSS {warm_mb} MB")
        full, full_mb, _ = refresh_all(rounds, hpc_rounds, server.url, tmp / "all", prices.url, "--full")
        peaks.append(full_mb)
        print(f"the same with --full (every job runs, nothing re-parsed or rebuilt): {full:.1f} s, peak RSS {full_mb} MB")
        site_seconds, site_mb = site(tmp / "all", tmp / "site")
        peaks.append(site_mb)
        pages = sum(1 for _ in (tmp / "site").rglob("*.html"))
        print(f"results site of all {every}: {site_seconds:.1f} s, {pages} pages, peak RSS {site_mb} MB")
    print(f"peak memory over all runs: {max(peaks)} MB")


if __name__ == "__main__":
    main()
