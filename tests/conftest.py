import ipaddress
import os
import socket
import sys
from collections import Counter
from pathlib import Path

import pytest

from support.markers import every_test_marked
from support.paths import IMPORTED_FOLDERS
from support.schedule import measured_seconds, module_order

# A machine that sets PYTHONDONTWRITEBYTECODE (some containers do) would have each pytest process rewrite every
# test module again, and each `mlperf-warehouse` process a test starts compile the project's modules again: the
# test processes keep both compiled in the checkout's git-ignored __pycache__ folders, which those processes read.
sys.dont_write_bytecode = False


def pytest_configure(config):
    """Nothing a test process writes lands in the checkout while tests run, where the test that proves a refresh
    writes nothing into the checkout would see it: Hypothesis keeps its examples and its cache of the modules'
    constants in a folder of the machine's temp directory (kept between runs, so a failing example is tried
    first next time), and the controller compiles the project's and the test helpers' modules before any test
    process starts (a module compiled the first time a test imports it would appear mid-run). Compiled files
    already up to date are left as they are."""
    import tempfile

    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / f"mlperf-warehouse-tests-{os.getuid()}" / "hypothesis")
    if hasattr(config, "workerinput"):
        return
    import compileall

    for folder in IMPORTED_FOLDERS:
        compileall.compile_dir(folder, quiet=2, workers=1)


def _fast_lane(config) -> bool:
    """Whether this run is the fast lane: `-m "not slow"`."""
    return (config.getoption("markexpr") or "").strip() == "not slow"


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core, and one more when the slow lane runs: its tests spend seconds waiting on
    a refresh process, a browser or a timeout, and the extra worker runs meanwhile; the fast lane's tests
    compute all the time (both measured in benchmarks/RESULTS.md)."""
    cores = len(os.sched_getaffinity(0))
    return cores if _fast_lane(config) else cores + 1


def pytest_ignore_collect(collection_path, config):
    """The fast lane (`-m "not slow"`) does not import a module whose every test is slow: each worker would import
    it and collect its tests only to deselect them all."""
    if (_fast_lane(config) and collection_path.suffix == ".py" and collection_path.name.startswith("test_")
            and every_test_marked(collection_path, "slow")):
        return True
    return None


def pytest_collection_modifyitems(config, items):
    """The order test modules run in (`support/schedule.py`): README's test command (`-n auto --dist loadfile
    --no-loadscope-reorder`) hands whole modules to the xdist workers in this order."""
    module = {item: item.nodeid.split("::")[0] for item in items}
    readers = {module[item] for item in items if item.get_closest_marker("shared_build")}
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    order = module_order(Counter(module.values()), readers, measured_seconds(), workers)
    position = {name: index for index, name in enumerate(order)}
    items.sort(key=lambda item: position[module[item]])  # stable: a module's own tests keep their order


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """A fresh warehouse directory for one test: this process's (in the test's run context, as the settings layer
    puts it there) and the environment's (for the processes and runs the test starts)."""
    from pipelines.lib.io.context import amend

    base = tmp_path / "warehouse"
    base.mkdir()
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    amend(warehouse_dir=base)
    return base


@pytest.fixture
def settings_from_env():
    """Read the settings from the environment now and install them in this process, as a command or a run
    does when it starts (call it after monkeypatch.setenv)."""
    from pipelines.settings import apply, load_settings

    return lambda **overrides: apply(load_settings(**overrides))


@pytest.fixture(autouse=True)
def _fresh_run_context():
    """Each test runs in a run context of its own, at the defaults, and the one before comes back after it (a
    command run in-process applies its settings: the warehouse folder, limits, allowed hosts, secrets, the team
    catalog)."""
    from pipelines.lib.io.context import RunContext, activate

    with activate(RunContext()):
        yield


@pytest.fixture(autouse=True)
def _package_rules_stand_in(request, monkeypatch):
    """Test archives built from the installed package's rule files (support.logs.package_rules_archive) stand
    in for the real releases without ../shared: in this process their content is accepted beside the
    pinned one. A test marked `pinned_rules_only` sees the pins alone."""
    if request.node.get_closest_marker("pinned_rules_only"):
        return
    from support.logs import accept_package_rules

    accept_package_rules(monkeypatch)


# Names that never reach a public resolver's answer (RFC 2606, RFC 6761): tests may look them up to see a
# source fail as "host not found".
RESERVED_NAMES = (".invalid", ".example", ".test", ".localhost")


def _local_or_reserved(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%")[0])  # an address is not looked up
        return True
    except ValueError:
        return ("." + host.rstrip(".").lower()).endswith(RESERVED_NAMES)  # "localhost" and "x.invalid" alike


@pytest.fixture(autouse=True)
def _no_public_host_lookups(monkeypatch):
    """Tests serve every source over loopback. A host name looked up in a test's process that could reach the
    internet (a default URL left in place) fails that test, naming the host, even where the lookup's failure
    would pass as a source being offline."""
    looked_up = []
    resolve = socket.getaddrinfo

    def guarded(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else str(host)
        if host is not None and not _local_or_reserved(name):
            looked_up.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"a test may not look up the public host {name}")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    yield
    assert not looked_up, f"the test looked up public hosts (serve them over loopback): {sorted(set(looked_up))}"
