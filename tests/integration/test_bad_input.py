"""Bad upstream input: a clear error or a quarantine row, nothing written outside the warehouse,
and the previously published warehouse left readable and unchanged."""

import hashlib
import shutil
import tarfile

import duckdb
import pytest

from pipelines.runner.jobs import refresh
from support.http_server import Drop, LoopbackServer, Status
from support.logs import accept_package_rules, make_archive, open_ssd_run, serve_package_rules, system_json
from support.paths import copy_warehouse
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow]

ROUND = "v4.1"  # the hand-written logs follow the v4.1 rules
ARCHIVE = f"training_results_{ROUND}-main.tar.gz"


def _good_members():
    members = {"Acme/systems/box.json": system_json()}
    for i, minutes in enumerate([10, 20, 30]):
        members[f"Acme/results/box/ssd/result_{i}.txt"] = "\n".join(open_ssd_run(10**6 * (i + 1), minutes)).encode()
    return members


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture(scope="module")
def published_once(tmp_path_factory):
    """A good round served and published once for the module: (served dir, warehouse)."""
    root = tmp_path_factory.mktemp("published-once")
    site, warehouse = root / "site", root / "warehouse"
    site.mkdir()
    warehouse.mkdir()
    (site / ARCHIVE).write_bytes(make_archive(_good_members()))
    serve_package_rules(site, ROUND)
    with pytest.MonkeyPatch.context() as env, LoopbackServer(site) as server:
        env.setenv("MLPERF_WAREHOUSE_DIR", str(warehouse))
        accept_package_rules(env)  # as every test does (tests/conftest.py)
        first = _refresh(server)
    assert first.ok and first.published, first.render()
    return site, warehouse


@pytest.fixture
def served(published_once, tmp_path, warehouse):
    """A copy of the module's published round and of what it served; yields (server, served dir, warehouse,
    published digest)."""
    site = tmp_path / "site"
    shutil.copytree(published_once[0], site)
    copy_warehouse(published_once[1], warehouse)
    with LoopbackServer(site) as server:
        yield server, site, warehouse, _digest(warehouse / "mlperf.duckdb")


def _refresh(server):
    return refresh(refresh_settings(rounds=[ROUND],
                                    results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                    rules_url_template=f"{server.url}/logging-{{ref}}.tar.gz"),
                   prices=False, backoff_seconds=0.01)


def _assert_untouched(tmp_path, site, warehouse, digest):
    assert _digest(warehouse / "mlperf.duckdb") == digest
    con = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True)
    assert con.execute("select score_minutes from fct_training_result").fetchone() == (20.0,)
    served_files = {"site", *(f"site/{p}" for p in _tree(site))}
    assert set(_tree(tmp_path)) - served_files <= {f"warehouse/{p}" for p in _tree(warehouse)} | {"warehouse"}


def test_truncated_gzip_is_a_clear_error_and_keeps_the_warehouse(served, tmp_path):
    server, site, warehouse, digest = served
    good = (site / ARCHIVE).read_bytes()
    (site / ARCHIVE).write_bytes(good[: len(good) // 2])
    summary = _refresh(server)
    assert not summary.ok and not summary.published
    assert "cannot read archive" in summary.render()
    _assert_untouched(tmp_path, site, warehouse, digest)


def test_http_500_until_retries_run_out(served, tmp_path):
    server, site, warehouse, digest = served
    (site / ARCHIVE).write_bytes(make_archive(_good_members() | {"Acme/systems/other.json": system_json()}))
    server.script(f"/{ARCHIVE}", [Status(500)] * 5)
    summary = _refresh(server)
    assert not summary.ok and "500" in summary.render()
    _assert_untouched(tmp_path, site, warehouse, digest)


def test_429_and_dropped_connection_are_retried(served, tmp_path):
    server, site, warehouse, _ = served
    (site / ARCHIVE).write_bytes(make_archive(_good_members() | {"Acme/systems/other.json": system_json()}))
    server.script(f"/{ARCHIVE}", [Status(429, retry_after="0"), Drop()])
    summary = _refresh(server)
    assert summary.ok and summary.published, summary.render()
    con = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True)
    assert con.execute("select count(*) from dim_system").fetchone() == (2,)


def test_hostile_members_garbage_logs_and_broken_systems_are_quarantined(served, tmp_path):
    server, site, warehouse, _ = served
    evil = [tarfile.TarInfo("top/../../x"), tarfile.TarInfo("top/Acme/results/box/ssd/result_9.txt")]
    evil[1].type, evil[1].linkname = tarfile.SYMTYPE, "/etc/passwd"
    evil[0].size = 0
    members = _good_members() | {
        "Acme/results/box/ssd/result_3.txt": b"\x00\xffnot a log\n" * 50,
        "Acme/systems/broken.json": b"this is not JSON",
        "Acme/results/broken/ssd/result_0.txt": "\n".join(open_ssd_run(10**6, 5)).encode(),
    }
    (site / ARCHIVE).write_bytes(make_archive(members, top="top", extra=evil))
    summary = _refresh(server)
    assert summary.ok and summary.published, summary.render()
    con = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True)
    reasons = [r for (r,) in con.execute("select reason from fct_quarantine order by 1").fetchall()]
    assert any("'..'" in r for r in reasons)
    assert any("link" in r for r in reasons)
    assert any(r.startswith("system description is not valid JSON") for r in reasons)
    assert any(r.startswith("no MLPerf log lines") for r in reasons)
    # The garbage log is a dropped run, so one drop is absorbed by the olympic mean of box/ssd.
    assert con.execute(
        "select runs_total, runs_dropped, score_minutes from fct_training_result where system = 'box'"
    ).fetchone() == (4, 1, 25.0)
    assert not (tmp_path.parent / "x").exists() and not (tmp_path / "x").exists()
    assert "x" not in _tree(warehouse)


def test_an_unknown_accelerator_is_named_by_its_check(served, tmp_path):
    server, site, warehouse, _ = served
    (site / ARCHIVE).write_bytes(make_archive(
        _good_members() | {"Acme/systems/box.json": system_json(accelerator_model_name="Quantum Widget 9000")}
    ))
    summary = _refresh(server)
    check = next(s for s in summary.steps if s.name == "check unmapped_accelerators")
    assert check.ok and "Quantum Widget 9000" in check.detail and "warning" in check.detail  # a WARN
    assert summary.published and summary.ok  # new hardware never fails a refresh
