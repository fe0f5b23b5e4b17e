"""`mlperf-warehouse ui` cannot be driven from another site: read-only by default, no GraphQL mutation over
GET, no foreign Host or Origin, no run config that changes sources, and no secret in any answer. Each
case is a real request to the real UI process on 127.0.0.1."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pytest

from support.ui_process import graphql, running_ui

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

KEY = "AIzaFAKE-ui-3f1b9c0d7e-not-a-real-key"
LAUNCH = ('mutation { launchRun(executionParams: { selector: { repositoryLocationName: "mlperf_warehouse", '
          'repositoryName: "__repository__", jobName: "training_round_job" }, runConfigData: "{}", '
          'executionMetadata: { tags: [{ key: "dagster/partition", value: "v4.1" }] } }) { __typename '
          '... on PythonError { message } ... on UnauthorizedError { message } ... on RunConfigValidationInvalid '
          '{ errors { message } } } }')


def _request(url: str, *, method: str = "GET", body: bytes | None = None, headers: dict | None = None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui_security")
    environment = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"} | {
        "MLPERF_WAREHOUSE_DIR": str(tmp / "warehouse"), "MLPERF_GCP_API_KEY": KEY}
    return environment, tmp


@pytest.fixture(scope="module")
def ui(env):
    environment, tmp = env
    with running_ui(environment, tmp / "ui.log") as url:
        yield url


def test_a_mutation_over_get_is_refused(ui):
    status, body = _request(f"{ui}/graphql?query=" + urllib.parse.quote(LAUNCH), headers={"Host": ui[7:]})
    assert status == 403 and body.strip() == "refused: GraphQL mutations are not accepted over GET"
    # a query over GET (what a link can do) still answers
    status, body = _request(f"{ui}/graphql?query=" + urllib.parse.quote("{ version }"))
    assert status == 200 and "version" in body


@pytest.mark.parametrize("headers,why", [
    ({"Host": "evil.example"}, "Host 'evil.example' is not this UI's address"),
    ({"Host": "evil.example:3000"}, "is not this UI's address"),  # DNS rebinding: the name gives it away
    ({"Origin": "http://evil.example"}, "requests from 'http://evil.example' may not drive this UI"),
    ({"Origin": "null"}, "opaque origin"),
])
def test_foreign_hosts_and_origins_are_refused(ui, headers, why):
    body = json.dumps({"query": "{ version }"}).encode()
    status, text = _request(f"{ui}/graphql", method="POST", body=body,
                            headers={"Content-Type": "application/json", **headers})
    assert status == 403 and why in text
    assert _request(ui + "/", headers=headers)[0] == 403  # the pages too


def test_a_form_post_cannot_reach_graphql(ui):
    status, text = _request(f"{ui}/graphql", method="POST", body=b"query=" + urllib.parse.quote(LAUNCH).encode(),
                            headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 403 and "application/json" in text


def test_the_ui_is_read_only_by_default(ui):
    answer = graphql(ui, LAUNCH, expect_errors=True)
    launched = answer.get("data", {}).get("launchRun") or {}
    assert launched.get("__typename") != "LaunchRunSuccess", answer
    runs = graphql(ui, "{ runsOrError { ... on Runs { results { runId } } } }")["runsOrError"]["results"]
    assert runs == []


def test_the_gcp_key_is_in_no_answer_and_no_file(ui, env):
    environment, tmp = env
    answers = [graphql(ui, query, expect_errors=True) for query in (
        '{ allTopLevelResourceDetailsOrError(repositorySelector: { repositoryLocationName: "mlperf_warehouse", '
        'repositoryName: "__repository__" }) { __typename ... on ResourceDetailsList { results { name description '
        "configFields { name defaultValueAsJson } configuredValues { key value type } } } } }",
        '{ utilizedEnvVarsOrError(repositorySelector: { repositoryLocationName: "mlperf_warehouse", '
        'repositoryName: "__repository__" }) { __typename ... on EnvVarWithConsumersList { results { envVarName } } } }',
        "{ workspaceOrError { ... on Workspace { locationEntries { name } } } }",
        "{ instance { info } }",
    )]
    text = json.dumps(answers)
    assert "price_sources" in text and "ResourceDetailsList" in text, text[:2000]
    assert KEY not in text and KEY[:16] not in text
    hits = [str(p) for p in tmp.rglob("*") if p.is_file() and KEY[:16].encode() in p.read_bytes()]
    assert hits == []


def test_run_config_cannot_change_sources_or_the_warehouse(env, tmp_path):
    """With launching allowed, a run whose config points the results or the warehouse elsewhere is
    refused before it starts: the definitions' resources take no config."""
    environment, _ = env
    with running_ui(environment, tmp_path / "ui.log", "--allow-launch") as url:
        hostile = LAUNCH.replace('runConfigData: "{}"', 'runConfigData: "{\\"resources\\": {\\"results_source\\": '
                                 '{\\"config\\": {\\"rules_url_template\\": \\"http://evil.example/{ref}\\"}}}}"')
        answer = graphql(url, hostile, expect_errors=True)
        launched = answer["data"]["launchRun"]
        assert launched["__typename"] == "RunConfigValidationInvalid", answer
        assert "unexpected config entry" in json.dumps(launched)
        runs = graphql(url, "{ runsOrError { ... on Runs { results { runId } } } }")["runsOrError"]["results"]
        assert runs == []
    assert "warning: --allow-launch" in (tmp_path / "ui.log").read_text()


def test_a_non_loopback_host_is_warned_about(monkeypatch, capsys, tmp_path):
    from pipelines import cli
    from pipelines.commands import ui_server

    served = {}
    monkeypatch.setattr(ui_server, "serve", lambda workspace, host, port, read_only: served.update(
        host=host, read_only=read_only))
    monkeypatch.setattr("subprocess.Popen", lambda *a, **k: type("Daemon", (), {
        "terminate": lambda self: None, "wait": lambda self, timeout=None: 0})())
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(tmp_path / "warehouse"))
    # `ui` sets DAGSTER_HOME for the processes it starts; setting it first makes monkeypatch restore it.
    monkeypatch.setenv("DAGSTER_HOME", "")
    monkeypatch.delenv("DAGSTER_HOME")
    assert cli.main(["ui", "--host", "0.0.0.0"]) == 0
    err = capsys.readouterr().err
    assert "warning: --host 0.0.0.0 makes the UI reachable from other machines" in err
    assert served == {"host": "0.0.0.0", "read_only": True}
