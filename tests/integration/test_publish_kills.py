"""A publish (or a rollback) killed at any of its steps: `status` and `rollback` go by the published file itself,
so both are right whichever step the kill hit, between the rename of the file and its record too.

The kill is a real SIGKILL of a real build or rollback process, sent by that process to itself at an exact step
of the publish: the child wraps `os.link` and `os.replace` to kill itself before or after the call that is
the step (the hard link of the build, the rename over mlperf.duckdb, the rename of published.json); the code
that runs is the project's own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.warehouse import build as wh
from support.cli import CLI
from support.mini_warehouse import stage_round
from support.paths import TESTS_DIR, copy_warehouse

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

# step → (function, file name, before or after the call): where the child kills itself
STEPS = {
    "before the link": ("link", ".mlperf.duckdb.", "before"),
    "after the link": ("link", ".mlperf.duckdb.", "after"),
    "after the rename": ("replace", "mlperf.duckdb", "after"),
    "before the record's rename": ("replace", "published.json", "before"),
    "after the record": ("replace", "published.json", "after"),
}
KILLED = """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    function, name, when, operation = sys.argv[3:7]
    real = getattr(os, function)

    def step(src, dst, *args, **kwargs):
        hit = Path(dst).name.startswith(name) if name.endswith(".") else Path(dst).name == name
        if hit and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        real(src, dst, *args, **kwargs)
        if hit and when == "after":
            os.kill(os.getpid(), signal.SIGKILL)

    setattr(os, function, step)
    base = Path(sys.argv[1])
    if operation == "build":
        from support.mini_warehouse import stage_round
        from pipelines.lib.warehouse import build as wh
        stage_round(base, "v5.0", systems=4)
        wh.build(base)
    else:
        from pipelines.lib.warehouse.store import rollback
        rollback(base)
    print("not killed", flush=True)
"""


@pytest.fixture(scope="module")
def three_builds(tmp_path_factory) -> tuple[Path, list[str]]:
    """A warehouse that published three builds (2, 3, then 5 systems), the last one published."""
    base = tmp_path_factory.mktemp("kills") / "warehouse"
    base.mkdir()
    for systems in (2, 3, 5):
        stage_round(base, "v5.0", systems=systems)
        assert wh.build(base).published
    return base, sorted(p.name for p in (base / "builds").glob("mlperf-*.duckdb"))


def _published_file(base: Path) -> tuple[str, str, str]:
    """(kept build the published file is, its built_at, its fingerprint), read from the file alone."""
    published = base / "mlperf.duckdb"
    name = next(p.name for p in (base / "builds").glob("mlperf-*.duckdb") if p.stat().st_ino == published.stat().st_ino)
    con = duckdb.connect(str(published), read_only=True)
    try:
        built_at, fingerprint = con.execute("select built_at, fingerprint from _build_info").fetchone()
    finally:
        con.close()
    return name, str(built_at), fingerprint


@pytest.mark.parametrize("operation", ["build", "rollback"])
@pytest.mark.parametrize("step", sorted(STEPS))
def test_status_and_rollback_follow_the_published_file_after_a_kill(three_builds, tmp_path, operation, step):
    base = copy_warehouse(three_builds[0], tmp_path / "warehouse")
    builds = three_builds[1]
    env = os.environ | {"MLPERF_WAREHOUSE_DIR": str(base)}
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED), str(base), str(TESTS_DIR), *STEPS[step],
                            operation], env=env, capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr

    name, built_at, fingerprint = _published_file(base)
    renamed = step in ("after the rename", "before the record's rename", "after the record")
    kept = sorted(p.name for p in (base / "builds").glob("mlperf-*.duckdb"))
    expected = {"build": kept[-1], "rollback": builds[1]}[operation] if renamed else builds[2]
    assert name == expected, (step, operation, kept)

    status = subprocess.run(CLI + ["status", "--json"], env=env, capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert (shown["build"], str(shown["built_at"]), shown["fingerprint"]) == (name, built_at, fingerprint)
    recorded = json.loads((base / "builds" / "published.json").read_text())["build"]
    assert (shown["record_behind"] is None) == (recorded == name)
    text = subprocess.run(CLI + ["status"], env=env, capture_output=True, text=True).stdout
    assert f"  build:       {name}\n" in text and "DAMAGED" not in text

    rolled = subprocess.run(CLI + ["rollback"], env=env, capture_output=True, text=True)
    older = [b for b in kept if b < name]
    if not older:
        assert rolled.returncode == 1 and "nothing to roll back to" in rolled.stderr and name in rolled.stderr
        return
    assert rolled.returncode == 0, rolled.stderr
    assert rolled.stdout.startswith(f"published {older[-1]} ") and rolled.stdout.rstrip().endswith(f"was {name}")
    assert _published_file(base)[0] == older[-1]
    after = json.loads(subprocess.run(CLI + ["status", "--json"], env=env, capture_output=True, text=True).stdout)
    assert after["build"] == older[-1] and after["record_behind"] is None
