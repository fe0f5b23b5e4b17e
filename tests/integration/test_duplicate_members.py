"""A Training round whose archive holds paths twice (tar allows it; GitHub's archives never do), refreshed over real
HTTP on 127.0.0.1: a second `scaling.json` for a benchmark folder used to fail the grain test of
`stg_training_scaling` and leave the whole round out of the build. Now every second copy (scaling.json, a result log,
the systems file) is a quarantine row naming its path, and the round publishes as its first copies say."""

from __future__ import annotations

import io
import json
import tarfile

import duckdb
import pytest

from pipelines.lib.mlperf.rules import ref_for_round
from pipelines.runner.jobs import refresh
from support.http_server import LoopbackServer
from support.logs import accept_package_rules, open_ssd_run, serve_package_rules, system_json
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow]

ROUND = "v4.1"  # the hand-written logs follow the v4.1 rules
FOLDER = "Acme/results/box/ssd"
TWICE = (f"{FOLDER}/scaling.json", f"{FOLDER}/result_0.txt", "Acme/systems/box.json")


def _archive() -> bytes:
    members = [("Acme/systems/box.json", system_json())]
    members += [(f"{FOLDER}/result_{i}.txt", "\n".join(open_ssd_run(10**6 * (i + 1), minutes)).encode())
                for i, minutes in enumerate((10, 20, 30))]
    members.append((f"{FOLDER}/scaling.json", json.dumps({"scaling_factor": 1.5}).encode()))
    # the second copies, each claiming something else: a faster run, another factor, another system
    members += [(f"{FOLDER}/scaling.json", json.dumps({"scaling_factor": 0.01}).encode()),
                (f"{FOLDER}/result_0.txt", "\n".join(open_ssd_run(10**6, 1)).encode()),
                ("Acme/systems/box.json", system_json(system_name="Fake Box", accelerators_per_node="1"))]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, data in members:
            info = tarfile.TarInfo(f"training_results_{ROUND}-main/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_a_path_held_twice_is_quarantined_and_the_round_publishes(tmp_path, monkeypatch):
    site, base = tmp_path / "site", tmp_path / "warehouse"
    site.mkdir()
    (site / f"training_results_{ROUND}-main.tar.gz").write_bytes(_archive())
    serve_package_rules(site, ROUND)
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    accept_package_rules(monkeypatch)
    with LoopbackServer(site) as server:
        summary = refresh(refresh_settings(rounds=[ROUND],
                                           results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                           rules_url_template=f"{server.url}/logging-{{ref}}.tar.gz",
                                           trust_rules_refs=[ref_for_round(ROUND).ref]),
                          prices=False, backoff_seconds=0.01)
    assert summary.ok and summary.published, summary.render()
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        # the first copies: runs of 10, 20 and 30 minutes (olympic mean 20) × the factor 1.5, on the real system
        assert con.execute("select score_minutes from fct_training_result").fetchall() == [(30.0,)]
        assert con.execute("select system_name, accelerators_per_node from dim_system").fetchall() == [("Acme Box", 8)]
        reasons = dict(con.execute("select file, reason from fct_quarantine").fetchall())
    assert sorted(reasons) == sorted(TWICE)
    for path in TWICE:
        assert reasons[path] == (f"refused archive member 'training_results_{ROUND}-main/{path}': the archive holds "
                                 "this path more than once; its first copy is read")
