"""The GCP key never lands anywhere: not in URLs, messages, state files, Dagster's run storage or
compute logs, metadata, raw files or the command output, whatever the price server does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipelines.lib.prices.fetch import GCP_SERVICES, GCP_SKUS_PATH
from pipelines.runner.jobs import refresh
from support.cli import CLI
from support.hostile_server import HostileServer, deep_json, endless, fixed
from support.http_server import free_port
from support.price_site import PRICE_URL_VARIABLES
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

KEY = "AIzaFAKE-h5-9d2c71e0b4aa-not-a-real-key"


def _grep(root: Path) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if KEY.encode() in data or KEY[:20].encode() in data:
                hits.append(str(path))
    return hits


CASES = {
    "html_200": fixed(b"<html><body>Sign in. Your request: /v1/services?key=" + KEY.encode() + b"</body></html>",
                      content_type="text/html"),
    "server_error": fixed(b"oops " + KEY.encode(), "500 Internal Server Error", "text/plain"),
    "forbidden": fixed(b'{"error": {"message": "API key ' + KEY.encode() + b' not valid"}}', "403 Forbidden"),
    "echoed_in_json": fixed(b'{"skus": [{"skuId": "' + KEY.encode() + b'", "description": "' + KEY.encode() + b'"}]}'),
    "deep_json": fixed(deep_json()),
    "endless": endless(),
}


def test_the_gcp_key_is_found_nowhere_after_the_failure_cases(tmp_path, warehouse, monkeypatch, capsys, settings_from_env):
    from pipelines.defs.prices.resources import price_sources_from_settings
    from pipelines.defs.resources import WarehouseLocation
    from pipelines.runner.instance import warehouse_instance
    from pipelines.runner.price_steps import refresh_prices

    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("MLPERF_GCP_API_KEY", KEY)
    monkeypatch.setenv("MLPERF_MAX_RESPONSE_BYTES", str(1 << 20))
    settings_from_env(warehouse_dir=warehouse)
    outcomes = []
    with HostileServer() as server, warehouse_instance() as instance:  # the CLI's instance, on DAGSTER_HOME
        # Every price list on this server (no public host is looked up): the others 404, quick failures that
        # must not leak the key either.
        for variable in PRICE_URL_VARIABLES:
            monkeypatch.setenv(variable, server.url)
        resources = {"warehouse_location": WarehouseLocation(directory=str(warehouse))}
        for case in [*CASES, "connection_refused"]:
            for service in GCP_SERVICES.values():
                server.route(GCP_SKUS_PATH.format(service=service), CASES.get(case, fixed(b"{}")))
            url = f"http://127.0.0.1:{free_port()}" if case == "connection_refused" else server.url
            sources = price_sources_from_settings(gcp_url=url, backoff_seconds=0.01, max_attempts=2)
            steps = refresh_prices(instance, resources, print, price_sources=sources)
            outcomes.append((case, next(s for s in steps if s.name == "prices gcp")))
        # The full refresh records its outcome for `status` and renders the summary.
        summary = refresh(refresh_settings(), instance=instance, backoff_seconds=0.01, progress=print)
        print(summary.render())
        headers = [h for path, h in server.requests if "/v1/services/" in path]
        assert headers and all(h.get("x-goog-api-key") == KEY for h in headers)  # sent, in the header
        assert all(KEY not in path for path, _ in server.requests)  # never in a URL
    failed = {case for case, step in outcomes if not step.ok}
    assert failed == {*CASES, "connection_refused"} - {"echoed_in_json"}, outcomes  # each failure is reported ...
    status = subprocess.run(CLI + ["status"], capture_output=True, text=True, env=os.environ | {"MLPERF_GCP_API_KEY": ""})
    assert "last refresh: FAILED" in status.stdout
    output = capsys.readouterr()
    assert KEY not in output.out + output.err + status.stdout + status.stderr
    assert _grep(warehouse) == [] and _grep(home) == []  # ... and the key is nowhere on disk
    assert list(home.rglob("*.db")), "Dagster kept its run storage there"
