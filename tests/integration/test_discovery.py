"""The round-discovery sensor against a fake GitHub API on 127.0.0.1 (real HTTP, no mocks)."""

from __future__ import annotations

import json
import time

import dagster as dg
import pytest

from pipelines.defs.operations.sensors import mlperf_round_discovery
from pipelines.defs.rounds.assets import SUITE_ROUNDS
from pipelines.lib.mlperf.discovery import discover_rounds
from pipelines.lib.mlperf.suites import TRAINING
from support.http_server import LoopbackServer, Reply

training_rounds = SUITE_ROUNDS[TRAINING.name].partitions

ETAG = '"repos-v1"'
PAGE_1 = ["training_results_v5.1", "inference_results_v5.0", "training_results_v6.0", "training_policies"]
PAGE_2 = ["training_results_v5.0", "training_results_v4.1", "hpc_results_v3.0", "hpc_results_v4.0"]


class FakeGitHub:
    """GET /orgs/mlcommons/repos, two pages linked with `Link: rel="next"`, ETag on page 1."""

    def __init__(self, server: LoopbackServer) -> None:
        self.server, self.rate_limited = server, False
        server.route("/orgs/mlcommons/repos", self.repos)

    def repos(self, path: str, query: dict, headers: dict) -> Reply:
        if self.rate_limited:
            return Reply(403, b'{"message": "API rate limit exceeded"}',
                         {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 900)})
        page = int(query.get("page", "1"))
        if page == 1 and headers.get("if-none-match") == ETAG:
            return Reply(304, b"", {"ETag": ETAG})
        names = PAGE_1 if page == 1 else PAGE_2
        link = {"Link": f'<{self.server.url}{path}?per_page=100&page=2>; rel="next"'} if page == 1 else {}
        return Reply(200, json.dumps([{"name": n} for n in names]).encode(), {"ETag": ETAG if page == 1 else '"p2"'} | link)


@pytest.fixture
def github(monkeypatch, tmp_path):
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(tmp_path))
    monkeypatch.setenv("MLPERF_GITHUB_TOKEN", "test-token")
    with LoopbackServer() as server:
        monkeypatch.setenv("MLPERF_GITHUB_API_URL", server.url)
        yield FakeGitHub(server)


def evaluate(instance: dg.DagsterInstance, cursor: str | None):
    return mlperf_round_discovery(dg.build_sensor_context(instance=instance, cursor=cursor))


def test_discover_rounds_follows_pages_and_sends_token(github):
    found = discover_rounds(api_url=github.server.url, token="test-token")
    assert found.rounds_by_suite["training"] == ["v4.1", "v5.0", "v5.1", "v6.0"] and found.etag == ETAG
    # each suite's rounds apart: HPC v4.0 is no Training round
    assert found.rounds_by_suite["hpc"] == ["v3.0", "v4.0"] and found.rounds_by_suite["inference"] == ["v5.0"]
    requests = github.server.requests_for("/orgs/mlcommons/repos")
    assert len(requests) == 2 and all(h["authorization"] == "Bearer test-token" for _, _, h in requests)
    assert "per_page=100" in requests[0][1]


def test_sensor_adds_new_round_then_304_then_rate_limit(github):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(training_rounds.name, ["v4.1", "v5.0", "v5.1"])
    instance.add_dynamic_partitions("mlperf_hpc_round", ["v3.0"])

    result = evaluate(instance, None)
    assert isinstance(result, dg.SensorResult)
    assert [(r.job_name, r.partition_key) for r in result.run_requests] == [
        ("training_round_job", "v6.0"), ("hpc_round_job", "v4.0")]
    # the request runs a job of the sensor, training_round_job: the whole mlperf group for that round
    assert result.run_requests[0].asset_selection is None
    from pipelines.definitions import defs

    job = defs().resolve_job_def("training_round_job")
    assert {k.to_user_string() for k in job.asset_layer.executable_asset_keys} >= {
        "training_results_archive", "training_rules_archive", "training_round_tables"}
    add, add_hpc = result.dynamic_partitions_requests
    assert add.partitions_def_name == "training_round" and list(add.partition_keys) == ["v6.0"]
    assert add_hpc.partitions_def_name == "mlperf_hpc_round" and list(add_hpc.partition_keys) == ["v4.0"]
    assert json.loads(result.cursor) == {"etag": ETAG}

    # Second evaluation sends the ETag; 304 means nothing new and costs no rate limit.
    instance.add_dynamic_partitions(training_rounds.name, ["v6.0"])
    instance.add_dynamic_partitions("mlperf_hpc_round", ["v4.0"])
    again = evaluate(instance, result.cursor)
    assert isinstance(again, dg.SkipReason) and "304" in again.skip_message
    assert github.server.requests_for("/orgs/mlcommons/repos")[-1][2]["if-none-match"] == ETAG

    # Rate-limited: no error, no runs, and the cursor remembers when to try again.
    github.rate_limited = True
    limited = evaluate(instance, None)
    assert isinstance(limited, dg.SensorResult) and not limited.run_requests
    skip_until = json.loads(limited.cursor)["skip_until"]
    assert skip_until > time.time() + 600
    calls = len(github.server.requests)
    waiting = evaluate(instance, limited.cursor)
    assert isinstance(waiting, dg.SkipReason) and len(github.server.requests) == calls  # GitHub not asked again


def test_sensor_tick_registers_partition_and_run(github):
    # The path the daemon takes: run requests are validated against the partitions added this tick.
    from pipelines.definitions import defs

    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, instance_ref=instance.get_ref(), cursor=None,
                                          definitions=defs(), sensor_name=mlperf_round_discovery.name)
        data = mlperf_round_discovery.evaluate_tick(context)
    assert sorted(r.partition_key for r in data.run_requests if r.job_name == "training_round_job") == [
        "v4.1", "v5.0", "v5.1", "v6.0"]
    assert [r.partition_key for r in data.run_requests if r.job_name == "hpc_round_job"] == ["v3.0", "v4.0"]
    assert [list(r.partition_keys) for r in data.dynamic_partitions_requests] == [
        ["v4.1", "v5.0", "v5.1", "v6.0"], ["v3.0", "v4.0"]]
    assert data.run_requests[0].tags["dagster/partition"] == "v4.1"


def test_github_down_is_a_skip_not_a_crash(github):
    github.server.close()
    result = evaluate(dg.DagsterInstance.ephemeral(), None)
    assert isinstance(result, dg.SkipReason) and "unavailable" in result.skip_message


def test_configured_rounds_become_partitions_without_github(monkeypatch):
    from pipelines.definitions import defs
    from pipelines.defs.operations.sensors import configured_rounds

    monkeypatch.setenv("MLPERF_ROUNDS", "v4.1,v5.0")
    monkeypatch.setenv("MLPERF_HPC_ROUNDS", "v1.0,v3.0")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("training_round", ["v4.1"])
        instance.add_dynamic_partitions("mlperf_hpc_round", ["v1.0"])
        context = dg.build_sensor_context(instance=instance, instance_ref=instance.get_ref(), cursor=None,
                                          definitions=defs(), sensor_name=configured_rounds.name)
        data = configured_rounds.evaluate_tick(context)
        # each suite's own partitions: HPC v3.0 is not Training's, and HPC v1.0 being known says nothing of Training's
        assert [(r.job_name, r.partition_key) for r in data.run_requests] == [
            ("training_round_job", "v5.0"), ("hpc_round_job", "v3.0")]
        assert [(r.partitions_def_name, list(r.partition_keys)) for r in data.dynamic_partitions_requests] == [
            ("training_round", ["v5.0"]), ("mlperf_hpc_round", ["v3.0"])]
        instance.add_dynamic_partitions("training_round", ["v5.0"])
        instance.add_dynamic_partitions("mlperf_hpc_round", ["v3.0"])
        again = configured_rounds.evaluate_tick(context)
        assert not again.run_requests and "already" in again.skip_message


def test_a_refresh_at_the_default_rounds_also_loads_every_later_round_github_lists(github, monkeypatch, tmp_path):
    from pipelines.commands.refresh import with_listed_rounds
    from pipelines.settings import load_settings

    settings = load_settings()
    training, hpc = settings.sources.suite("training").rounds, settings.sources.suite("hpc").rounds
    defaults = {"training": list(training), "hpc": list(hpc), "inference": []}
    by_suite, note = with_listed_rounds(defaults, settings, tmp_path)
    assert by_suite["hpc"] == [*hpc, "v4.0"] and by_suite["training"] == list(training)
    assert by_suite["inference"] == [] and note == "rounds GitHub lists beyond the defaults: HPC v4.0"
    assert with_listed_rounds(defaults, settings, tmp_path)[0] == by_suite  # asked again: a 304, the kept listing
    assert "if-none-match" in github.server.requests_for("/orgs/mlcommons/repos")[-1][2]
    # rounds a user configured stay exactly those
    monkeypatch.setenv("MLPERF_HPC_ROUNDS", "v1.0")
    configured = load_settings()
    chosen = {"training": [], "hpc": ["v1.0"], "inference": []}
    assert with_listed_rounds(chosen, configured, tmp_path) == (chosen, "")
    # GitHub unreachable with nothing kept: the defaults alone, said so
    monkeypatch.delenv("MLPERF_HPC_ROUNDS")
    monkeypatch.setenv("MLPERF_GITHUB_API_URL", "http://github-api.invalid")
    rounds, why = with_listed_rounds(defaults, load_settings(), tmp_path / "fresh")
    assert rounds == defaults and why.startswith("the default rounds only (GitHub could not be read")
