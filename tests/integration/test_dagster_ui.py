"""After `mlperf-warehouse refresh`, `mlperf-warehouse ui` (dg dev on the same instance) shows what the
CLI did: its runs, the materializations, the round partition and the check results. Looked at in a
real browser and asked through Dagster's own GraphQL endpoint."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from support.logs import ssd_mirror
from support.ui_process import CLI, graphql, running_ui

pytestmark = [pytest.mark.slow, pytest.mark.subprocess, pytest.mark.browser]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


_graphql = graphql


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """A CLI refresh of a small synthetic round (prices off), then `mlperf-warehouse ui` on its warehouse."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium; .ci/run does)")
    pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[test]'")
    tmp = tmp_path_factory.mktemp("dagster_ui")
    warehouse = tmp / "warehouse"
    environment = ({k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
                   | ssd_mirror(tmp / "site", systems=6).settings(warehouse))
    refresh = subprocess.run(CLI + ["refresh", "--rounds", "v4.1", "--no-prices"], env=environment,
                             capture_output=True, text=True)
    assert refresh.returncode == 0, refresh.stdout + refresh.stderr
    home = warehouse / "dagster"
    assert (home / "dagster.yaml").exists() and list(home.rglob("*.db")), "the CLI ran on <warehouse>/dagster"

    with running_ui(environment, tmp / "ui.log") as url:
        yield url, tmp


def test_graphql_lists_every_asset_and_the_cli_materializations(ui):
    from pipelines.definitions import defs

    url, _ = ui
    graph = defs().get_repository_def().asset_graph
    every_key = {key.to_user_string() for key in graph.get_all_asset_keys()}
    price_keys = {key.to_user_string() for key in graph.get_all_asset_keys() if graph.get(key).group_name == "prices"}
    # built by `mlperf-warehouse site` or site_job, not by a refresh
    site_keys = {key.to_user_string() for key in graph.get_all_asset_keys() if graph.get(key).group_name == "site"}
    # the other suites' round assets: this refresh loads a Training round only
    other_suites = {key.to_user_string() for key in graph.get_all_asset_keys()
                    if graph.get(key).group_name in ("hpc", "inference")}
    data = _graphql(url, "{ assetNodes { assetKey { path } } }")
    listed = {"/".join(node["assetKey"]["path"]) for node in data["assetNodes"]}
    assert every_key == listed

    data = _graphql(url, "{ assetsOrError { ... on AssetConnection { nodes { key { path } "
                         "assetMaterializations(limit: 1) { runId partition } } } } }")
    latest = {"/".join(n["key"]["path"]): n["assetMaterializations"] for n in data["assetsOrError"]["nodes"]}
    runs = _graphql(url, "{ runsOrError { ... on Runs { results { runId jobName status } } } }")["runsOrError"]["results"]
    cli_runs = {run["runId"]: run for run in runs}
    assert {run["jobName"] for run in runs} == {"training_round_job", "warehouse_job", "outputs_job"}
    assert all(run["status"] == "SUCCESS" for run in runs), runs
    materialized = every_key - price_keys - site_keys - other_suites  # prices were off
    assert all(latest.get(key) for key in materialized), [k for k in materialized if not latest.get(k)]
    assert all(latest[key][0]["runId"] in cli_runs for key in materialized)
    assert latest["training_round_tables"][0]["partition"] == "v4.1"
    assert not any(latest.get(key) for key in price_keys)


def test_every_public_table_has_lineage_from_the_archives_or_price_lists(ui):
    """As the UI's lineage view draws it (GraphQL's dependencyKeys): every model that is a public table
    traces back to the results archive, and the price tables to the price lists."""
    url, _ = ui
    nodes = _graphql(url, "{ assetNodes { assetKey { path } groupName dependencyKeys { path } } }")["assetNodes"]
    upstream = {"/".join(n["assetKey"]["path"]): {"/".join(d["path"]) for d in n["dependencyKeys"]} for n in nodes}
    groups = {"/".join(n["assetKey"]["path"]): n["groupName"] for n in nodes}

    def ancestors(key: str) -> set[str]:
        seen, todo = set(), [key]
        while todo:
            for parent in upstream[todo.pop()] - seen:
                seen.add(parent)
                todo.append(parent)
        return seen

    from pipelines.defs.warehouse.models import MODELS

    public = [key for key, group in groups.items() if group in ("core", "metrics") and not key.startswith("int_")]
    assert len(public) >= 13, public
    # a model that reads seeds alone (reference data shipped with the code), directly or through other such
    # models, has no upstream asset
    seeds_only: set[str] = set()
    while True:
        more = {name for name, model in MODELS.items()
                if all(dep.endswith("_seed") or dep in seeds_only for dep in model.depends_on)}
        if more <= seeds_only:
            break
        seeds_only |= more
    for key in set(public) - seeds_only:
        found = ancestors(key)
        archives = {"training_results_archive", "hpc_results_archive", "inference_results_archive"}
        assert found & archives or found & {k for k, g in groups.items() if g == "prices"}, key
    assert {"training_results_archive", "training_rules_archive"} <= ancestors("fct_training_result")
    assert {"aws_prices", "azure_prices"} <= ancestors("mart_cost_to_train")
    assert "fct_training_result" in ancestors("mart_scaling_efficiency")


def test_the_ui_shows_the_cli_runs_partitions_and_checks(ui):
    from playwright.sync_api import expect, sync_playwright

    url, tmp = ui
    shots = tmp / "screenshots"
    shots.mkdir(exist_ok=True)
    print(f"screenshots in {shots}")
    # an asset with checks that ran in the CLI's warehouse_job, and the run ids the CLI recorded
    data = _graphql(url, "{ assetNodes { assetKey { path } hasAssetChecks assetChecksOrError { ... on AssetChecks "
                         "{ checks { name executionForLatestMaterialization { status } } } } } }")
    checked = [(node["assetKey"]["path"], check) for node in data["assetNodes"] if node["hasAssetChecks"]
               for check in node["assetChecksOrError"]["checks"]]
    evaluated = [(path, check) for path, check in checked
                 if (check["executionForLatestMaterialization"] or {}).get("status") in ("SUCCEEDED", "FAILED")]
    assert evaluated, checked
    check_asset, check = evaluated[0]
    runs = _graphql(url, "{ runsOrError { ... on Runs { results { runId jobName } } } }")["runsOrError"]["results"]

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(90_000)

        page.goto(f"{url}/assets?view=flat")  # the catalog, one row per asset
        # (rows render as they scroll into view: these sort near the top; GraphQL checks every asset)
        for name in ("dim_accelerator", "dim_benchmark", "dim_system"):
            expect(page.get_by_role("link", name=name).first).to_be_visible()
        expect(page.get_by_text("Loading...")).to_have_count(0)  # every row's status has arrived
        # (GraphQL checks every asset; the catalog renders only the rows in view, so one is asked for here)
        expect(page.get_by_text("Materialized", exact=True).first).to_be_visible()
        page.screenshot(path=str(shots / "asset_catalog.png"), full_page=True)

        page.goto(f"{url}/assets/training_round_tables?view=partitions")
        try:
            expect(page.get_by_text("v4.1", exact=True).first).to_be_visible()
            expect(page.get_by_text("Materialized (1)").first).to_be_visible()
        finally:
            page.screenshot(path=str(shots / "round_partitions.png"), full_page=True)

        page.goto(f"{url}/assets/{'/'.join(check_asset)}?view=checks")
        expect(page.get_by_text(check["name"]).first).to_be_visible()
        outcome = "Passed" if check["executionForLatestMaterialization"]["status"] == "SUCCEEDED" else "Failed"
        expect(page.get_by_text(outcome, exact=True).first).to_be_visible()
        page.screenshot(path=str(shots / "asset_checks.png"), full_page=True)

        page.goto(f"{url}/runs")
        for run in runs:
            expect(page.get_by_text(run["runId"][:8]).first).to_be_visible()
        for job_name in ("training_round_job", "warehouse_job", "outputs_job"):
            expect(page.get_by_text(job_name).first).to_be_visible()
        page.screenshot(path=str(shots / "runs.png"), full_page=True)
        browser.close()


def test_the_jobs_cover_every_asset_and_check_by_group():
    """What `refresh` runs is the definitions' jobs, selected by group: an asset or check added to a
    group runs under the CLI without anyone listing it."""
    from pipelines.definitions import defs

    definitions = defs()
    graph = definitions.get_repository_def().asset_graph
    groups = {"training_round_job": {"training"}, "hpc_round_job": {"hpc"}, "inference_round_job": {"inference"},
              "prices_job": {"prices"},
              "warehouse_job": {"staging", "core", "metrics"}, "outputs_job": {"outputs"}, "site_job": {"site"}}
    covered = set()
    for name, wanted in groups.items():
        job = definitions.resolve_job_def(name)
        keys = set(job.asset_layer.executable_asset_keys)
        assert keys and {graph.get(key).group_name for key in keys} <= wanted, name
        covered |= keys
        checks = {check for check in graph.asset_check_keys if check.asset_key in keys}
        assert checks <= set(job.asset_layer.asset_graph.asset_check_keys), f"{name} leaves out checks"
    assert covered == {key for key in graph.get_all_asset_keys() if graph.get(key).is_executable}


def test_mlperf_accept_shrink_reaches_the_results_resource(monkeypatch):
    from pipelines.defs.resources import results_source_from_settings
    from pipelines.lib.mlperf.suites import HPC, TRAINING
    from pipelines.settings import load_settings

    monkeypatch.delenv("MLPERF_ACCEPT_SHRINK", raising=False)
    assert results_source_from_settings().accept_shrink is False
    flagged = load_settings().replaced(accept_shrink=True)  # the CLI's --accept-shrink
    assert results_source_from_settings(flagged).accept_shrink is True
    monkeypatch.setenv("MLPERF_ACCEPT_SHRINK", "1")
    assert results_source_from_settings().accept_shrink is True
    monkeypatch.setenv("MLPERF_RESULTS_URL_TEMPLATE", "file:///mirror/training_results_{version}.tar.gz")
    source = results_source_from_settings()
    assert source.template_for(TRAINING) == "file:///mirror/training_results_{version}.tar.gz"
    assert source.template_for(HPC) == HPC.default_results_url_template
    flagged = load_settings().replaced(hpc_results_url_template="/x/{version}.tgz")  # --hpc-results-url-template
    assert results_source_from_settings(flagged).template_for(HPC) == "/x/{version}.tgz"
