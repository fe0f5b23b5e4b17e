"""The built wheel, installed outside the checkout, refreshes and publishes every table from an empty directory.

How the install is made honest and fast (the full, slow install with every dependency is `.ci/run`'s job):
- the wheel is built by pip from a copy of the tracked sources in a temp directory, so the checkout gets
  no `build/` or `*.egg-info`, with the locked setuptools of this interpreter (no build isolation: nothing
  is fetched from the package index);
- a fresh venv (no pip, no system site-packages) in a temp directory gets the wheel with `--no-deps`;
- its dependencies come from this interpreter's site-packages, appended by a `.pth` line. A directory
  named in a `.pth` file is only added to `sys.path`: the `.pth` files inside it (among them the
  checkout's editable-install hook) are not run, so `pipelines`, `schemas` and `sql` can only come from
  the venv's own site-packages, which comes first. The test asserts exactly that;
- the refresh runs with no PYTHONPATH, in an empty directory, with HOME there too.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import duckdb
import pytest

from support.logs import SSD_ROUND, ssd_mirror
from support.paths import PROJECT_ROOT, SHARED_MLPERF

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

ROUND = SSD_ROUND  # the shared round, or the synthetic mirror's where ../shared is absent
SHARED_ARCHIVE = SHARED_MLPERF / f"training_results_{ROUND}-main.tar.gz"
PACKAGES = ("pipelines", "schemas", "sql")


def _run(cmd, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _source_copy(dest: Path) -> Path:
    """The files git tracks (and new files it does not ignore), copied: what a clean clone would build."""
    listed = _run(["git", "-C", str(PROJECT_ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    for name in filter(None, listed.stdout.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _checkout_state() -> str:
    return _run(["git", "-C", str(PROJECT_ROOT), "status", "--porcelain", "--ignored", "--untracked-files=all"]).stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, venv site-packages, seconds per step) with the wheel installed."""
    if not (PROJECT_ROOT / ".git").exists():
        pytest.skip(f"{PROJECT_ROOT} is not a git checkout: no tracked files to build a wheel from")
    work = tmp_path_factory.mktemp("install")
    seconds = {}
    started = time.perf_counter()
    source = _source_copy(work / "source")
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w", str(work / "dist")])
    wheel, = (work / "dist").glob("mlperf_warehouse-*.whl")
    seconds["wheel"] = time.perf_counter() - started

    started = time.perf_counter()
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "dependencies_of_the_test_interpreter.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)])
    seconds["install"] = time.perf_counter() - started
    return python, site, seconds


def _clean_env(home: Path) -> dict[str, str]:
    """No PYTHONPATH (it would point at the checkout), no warehouse or Dagster home from the caller."""
    dropped = ("PYTHONPATH", "MLPERF_WAREHOUSE_DIR", "DAGSTER_HOME", "MLPERF_ROUNDS", "MLPERF_DEBUG",
               "MLPERF_RESULTS_URL_TEMPLATE", "MLPERF_RULES_URL_TEMPLATE", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return env | {"HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}


def test_the_wheel_ships_every_data_file_of_the_source_tree(installed):
    _python, site, _ = installed
    tracked = _run(["git", "-C", str(PROJECT_ROOT), "ls-files", *PACKAGES]).stdout.split()
    data = {name for name in tracked if not name.endswith(".py")}
    assert {n for n in data if n.endswith(".sql")} and {n for n in data if n.endswith(".csv")}
    missing = sorted(name for name in data if not (site / name).is_file())
    assert not missing, f"not in the installed wheel: {missing}"


def test_the_installed_packages_come_from_site_packages_not_the_checkout(installed, tmp_path):
    python, site, _ = installed
    code = "import json, pipelines, schemas, sql; print(json.dumps([m.__file__ for m in (pipelines, schemas, sql)]))"
    proc = _run([str(python), "-c", code], cwd=tmp_path, env=_clean_env(tmp_path))
    for path in json.loads(proc.stdout):
        assert Path(path).is_relative_to(site), f"{path} is not inside the venv's site-packages {site}"
        assert not Path(path).resolve().is_relative_to(PROJECT_ROOT.resolve())


def test_a_refresh_from_an_empty_directory_publishes_every_table_under_it(installed, tmp_path):
    python, site, seconds = installed
    if SHARED_ARCHIVE.exists():
        results = f"file://{SHARED_MLPERF}/training_results_{{version}}-main.tar.gz"
        rules = f"file://{SHARED_MLPERF}/logging/logging-{{ref}}.tar.gz"
        trust = []
    else:  # a small synthetic round, and the rules of the pinned package, served from files
        mirror = ssd_mirror(tmp_path / "archives", systems=3)
        results, rules = f"file://{mirror.results_template}", f"file://{mirror.rules_template}"
        trust = ["--trust-rules-ref", mirror.trusted_ref]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    site_before, checkout_before = _files(site), _checkout_state()

    started = time.perf_counter()
    cli = python.parent / "mlperf-warehouse"
    _run([str(cli), "refresh", "--rounds", ROUND, "--no-prices", "--results-url-template", results,
          "--rules-url-template", rules, *trust], cwd=run_dir, env=_clean_env(run_dir))
    seconds["refresh"] = time.perf_counter() - started
    print("install test seconds:", {k: round(v, 1) for k, v in seconds.items()})

    published = run_dir / "warehouse" / "mlperf.duckdb"
    assert published.is_file(), f"nothing published under {run_dir}: {sorted(_files(run_dir))[:20]}"
    models = {p.stem for p in (site / "sql").rglob("*.sql") if p.parent.name in ("staging", "intermediate", "marts")}
    assert len(models) >= 10, models
    with duckdb.connect(str(published), read_only=True) as con:
        tables = {name for (name,) in con.execute("select table_name from information_schema.tables").fetchall()}
        results_rows = con.execute("select count(*) from fct_training_result where round = ?", [ROUND]).fetchone()[0]
    assert models <= tables, f"models not published: {sorted(models - tables)}"
    assert results_rows > 0
    assert _files(site) == site_before, f"written into site-packages: {sorted(_files(site) ^ site_before)}"
    assert _checkout_state() == checkout_before, "the refresh wrote into the checkout"
