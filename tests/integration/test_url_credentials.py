"""A mirror reached through a URL with a user name and password: the downloads use the credentials, and they
are found nowhere else: not in the refresh's output, `status`, the warehouse's records (last_refresh.json, the
download sidecars, the pre-flight manifest) or Dagster's run storage, after a refresh that succeeds and one that
fails on the same mirror."""

from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest

from support.cli import CLI, in_process
from support.http_server import LoopbackServer, Reply
from support.logs import SSD_ROUND, ssd_mirror

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

USER = "mirror-reader"
PASSWORD = "Hunter2-p%40ss-7c1e9f"  # URL-encoded: `@` as %40, as a URL must carry it
DECODED = "Hunter2-p@ss-7c1e9f"
NEEDLES = [PASSWORD.encode(), DECODED.encode(), f"{USER}:".encode()]  # the password, typed or decoded; the userinfo


def _found(root, needles: list[bytes]) -> list[str]:
    return [str(path) for path in root.rglob("*") if path.is_file()
            and any(needle in path.read_bytes() for needle in needles)]


def test_a_mirror_password_is_used_to_download_and_shown_or_stored_nowhere(tmp_path, warehouse, monkeypatch, capsys):
    site = tmp_path / "site"
    mirror = ssd_mirror(site, systems=2)
    expected = "Basic " + base64.b64encode(f"{USER}:{DECODED}".encode()).decode()
    with LoopbackServer(site) as server:
        def private(path, _query, headers):  # the mirror answers only with its credentials
            return server._serve_file(path, headers) if headers.get("authorization") == expected else Reply(401)

        for path in (f"/training_results_{SSD_ROUND}-main.tar.gz", f"/logging-{mirror.trusted_ref}.tar.gz"):
            server.route(path, private)
        address = server.url.removeprefix("http://")
        base = f"http://{USER}:{PASSWORD}@{address}"
        env = os.environ | mirror.settings(warehouse) | {
            "MLPERF_RESULTS_URL_TEMPLATE": f"{base}/training_results_{{version}}-main.tar.gz",
            "MLPERF_RULES_URL_TEMPLATE": f"{base}/logging-{{ref}}.tar.gz"}
        env.pop("DAGSTER_HOME", None)  # the instance in <warehouse>/dagster
        done = in_process(["refresh", "--rounds", SSD_ROUND, "--no-prices"], env, monkeypatch, capsys)
        assert done.returncode == 0, done.stdout + done.stderr
        # the pre-flight's record holds no credentials: the mirror refuses its conditional GETs, the refresh runs
        first_requests = len(server.requests)
        again = in_process(["refresh", "--rounds", SSD_ROUND, "--no-prices"], env, monkeypatch, capsys)
        assert again.returncode == 0, again.stdout + again.stderr
        # the downloads themselves are still conditional (the sidecar's masked URL is this URL): nothing re-sent
        archive = [h for _, path, h in server.requests[first_requests:] if path.startswith("/training_results_")]
        assert archive and all("if-none-match" in h or "if-modified-since" in h for h in archive)
        assert "unchanged upstream" in again.stdout
        manifest = warehouse / "staging" / "_meta" / "last_full_refresh.json"  # gone after a failed refresh: read now
        assert "REDACTED@" in manifest.read_text() and _found(warehouse, NEEDLES) == []
        # a round the mirror does not have: the failure names its URL, without the password
        failed = in_process(["refresh", "--rounds", "v5.0", "--no-prices", "--full"], env, monkeypatch, capsys)
        assert failed.returncode == 1
        assert f"http://REDACTED@{address}/training_results_v5.0-main.tar.gz" in failed.stdout + failed.stderr
        sent = [headers.get("authorization") for _, path, headers in server.requests]
    assert sent.count(expected) >= 6 and set(sent) <= {expected, None}  # downloads used them; nothing else was sent
    status = subprocess.run(CLI + ["status", "--json"], env=env, capture_output=True, text=True)
    assert status.returncode == 0 and json.loads(status.stdout)["last_refresh"]["ok"] is False

    shown = "".join(run.stdout + run.stderr for run in (done, again, failed, status))
    assert not [n for n in NEEDLES if n.decode() in shown], shown
    assert _found(warehouse, NEEDLES) == []
    records = [warehouse / "builds" / "last_refresh.json", *warehouse.rglob("*.meta.json")]
    assert len(records) >= 3 and all(path.is_file() for path in records)
    assert any("REDACTED@" in path.read_text() for path in warehouse.rglob("*.meta.json"))  # recorded, masked
    assert list((warehouse / "dagster").rglob("*.db")), "Dagster's run storage is under the warehouse"
