"""The pre-flight that lets a refresh with nothing to do skip Dagster entirely, and never more than that."""

from __future__ import annotations

import os
import time
from datetime import date

import pytest

from pipelines.lib.io.http import fetch_to_file
from pipelines.lib.io.sidecars import unchanged_upstream
from pipelines.lib.warehouse import preflight
from pipelines.settings import load_settings
from support.http_server import LoopbackServer


@pytest.fixture
def upstream(tmp_path):
    root = tmp_path / "upstream"
    root.mkdir()
    (root / "a.tar.gz").write_bytes(b"first")
    with LoopbackServer(root) as server:
        yield root, server


def test_unchanged_upstream_needs_a_304_or_the_same_local_file(upstream, tmp_path):
    root, server = upstream
    dest = tmp_path / "copy" / "a.tar.gz"
    url = f"{server.url}/a.tar.gz"
    assert not unchanged_upstream(url, dest)  # no copy yet
    fetch_to_file(url, dest)
    assert unchanged_upstream(url, dest)
    assert server.requests_for("/a.tar.gz")[-1][2].get("if-none-match")  # it asked conditionally
    assert not unchanged_upstream(url.replace("a.tar", "b.tar"), dest)  # copy of another URL
    time.sleep(0.01)
    (root / "a.tar.gz").write_bytes(b"second")
    os.utime(root / "a.tar.gz", (time.time() + 5, time.time() + 5))
    assert not unchanged_upstream(url, dest)

    local = tmp_path / "local.tar.gz"
    local.write_bytes(b"same size")
    copy = tmp_path / "copy" / "local.tar.gz"
    fetch_to_file(local.as_uri(), copy)
    assert unchanged_upstream(local.as_uri(), copy)
    stat = local.stat()
    os.utime(local, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # same size, touched: changed
    assert not unchanged_upstream(local.as_uri(), copy)


def test_unchanged_upstream_is_false_when_the_server_is_gone(upstream, tmp_path):
    root, server = upstream
    dest = tmp_path / "a.tar.gz"
    url = f"{server.url}/a.tar.gz"
    fetch_to_file(url, dest)
    server.close()
    assert not unchanged_upstream(url, dest)


def _setup(base, server, prices=False):
    dest = base / "raw" / "a.tar.gz"
    url = f"{server.url}/a.tar.gz"
    fetch_to_file(url, dest)
    (base / "staging" / "training_runs").mkdir(parents=True)
    (base / "staging" / "training_runs" / "v1.0.parquet").write_bytes(b"x")
    request = preflight.request_key(["v1.0"], f"{server.url}/{{version}}", "rules/{ref}", prices,
                                    load_settings().fingerprint())
    preflight.record(base, request, [(url, dest)], date.today().isoformat() if prices else None)
    return request


def test_skip_only_when_everything_is_as_recorded(upstream, tmp_path, monkeypatch):
    root, server = upstream
    base = tmp_path / "warehouse"
    monkeypatch.delenv("MLPERF_GCP_API_KEY", raising=False)
    request = _setup(base, server)
    assert preflight.unchanged_since_last_refresh(base, request) is None

    other = preflight.request_key(["v1.0", "v2.1"], f"{server.url}/{{version}}", "rules/{ref}", False,
                                  load_settings().fingerprint())
    assert "other rounds" in preflight.unchanged_since_last_refresh(base, other)
    monkeypatch.setenv("MLPERF_MAX_SHRINK", "0.5")  # a setting changed: a full refresh
    changed = preflight.request_key(["v1.0"], f"{server.url}/{{version}}", "rules/{ref}", False,
                                    load_settings().fingerprint())
    assert "settings" in preflight.unchanged_since_last_refresh(base, changed)
    monkeypatch.delenv("MLPERF_MAX_SHRINK")

    staged = base / "staging" / "training_runs" / "v1.0.parquet"
    staged.write_bytes(b"y")  # a staged file replaced behind the manifest's back
    assert "staged" in preflight.unchanged_since_last_refresh(base, request)
    preflight.record(base, request, [(f"{server.url}/a.tar.gz", base / "raw" / "a.tar.gz")], None)
    assert preflight.unchanged_since_last_refresh(base, request) is None

    (root / "a.tar.gz").write_bytes(b"changed upstream")
    assert "a.tar.gz" in preflight.unchanged_since_last_refresh(base, request)

    preflight.forget(base)
    assert "no record" in preflight.unchanged_since_last_refresh(base, request)


def test_prices_are_refreshed_once_a_day_and_secrets_stay_out_of_the_manifest(upstream, tmp_path, monkeypatch):
    root, server = upstream
    base = tmp_path / "warehouse"
    monkeypatch.setenv("MLPERF_GCP_API_KEY", "AIzaFAKEKEYfakekeyFAKEKEY0123456789")
    request = _setup(base, server, prices=True)
    assert preflight.unchanged_since_last_refresh(base, request) is None
    manifest = (base / "staging" / "_meta" / preflight.MANIFEST).read_text()
    assert "AIzaFAKE" not in manifest and '"gcp_api_key": "set"' in manifest

    preflight.record(base, request, [], "2000-01-01")
    assert "price lists" in preflight.unchanged_since_last_refresh(base, request)
