"""Price pipeline end to end: the shared fixtures served by a real HTTP server on 127.0.0.1 at the
real API paths, through the Dagster assets, into fct_cloud_price; plus the fault cases."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from pipelines.defs.prices.assets import (
    PRICE_ASSETS,
    aws_prices,
    azure_prices,
    gcp_prices,
    oci_prices,
)
from pipelines.defs.prices.resources import price_sources_from_settings
from pipelines.defs.resources import WarehouseLocation
from pipelines.lib.io.paths import published_db
from pipelines.lib.warehouse import build as warehouse
from pipelines.runner.runs import run_error
from support.http_server import LoopbackServer, Reply, Status
from support.price_site import (
    AWS_OFFER,
    AZURE,
    DAY1,
    DAY2,
    GCP_COMPUTE,
    GCP_TPU,
    OCI,
    PRICE_URL_VARIABLES,
    SHARED_PRICES,
    json_reply,
    serve_fixtures,
    shared,
)
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow, pytest.mark.shared,
              pytest.mark.skipif(not SHARED_PRICES.is_dir(),
                                 reason=f"shared price fixtures not found at {SHARED_PRICES} (../shared beside the checkout)")]


@pytest.fixture
def site(tmp_path, monkeypatch):
    base = tmp_path / "warehouse"
    base.mkdir()
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    with LoopbackServer() as server:
        for name in PRICE_URL_VARIABLES:
            monkeypatch.setenv(name, server.url)
        monkeypatch.setenv("MLPERF_GCP_API_KEY", "test-key")
        serve_fixtures(server)
        yield server, base


def run(assets, day: str, base: Path, instance=None) -> dg.ExecuteInProcessResult:
    resources = {"price_sources": price_sources_from_settings(max_attempts=3, backoff_seconds=0.01),
                 "warehouse_location": WarehouseLocation(directory=str(base))}
    return dg.materialize(assets, partition_key=day, resources=resources, raise_on_error=False,
                          instance=instance or dg.DagsterInstance.ephemeral())


def query(base: Path, sql: str) -> pl.DataFrame:
    with duckdb.connect(str(published_db(base)), read_only=True) as con:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description]
        return pl.DataFrame([dict(zip(columns, r, strict=False)) for r in cursor.fetchall()], schema=columns, orient="row",
                            infer_schema_length=None)


def test_all_providers_end_to_end(site, capsys):
    server, base = site
    result = run(PRICE_ASSETS, DAY2, base)
    assert result.success, run_error(result)[0]
    built = warehouse.build(base)
    assert built.published

    h100 = query(base, "select * from fct_cloud_price_current where provider='azure' and "
                       "sku='Standard_ND96isr_H100_v5' and region='eastus' and pricing_model='on_demand'")
    assert h100.height == 1
    row = h100.row(0, named=True)
    assert row["price_per_hour_usd"] == pytest.approx(98.32)
    assert row["accelerators_per_instance"] == 8
    assert row["price_per_accelerator_hour_usd"] == pytest.approx(12.29)
    assert row["snapshot"] == f"azure-{DAY2}"
    assert row["source_url"].startswith(server.url + AZURE)

    sources = query(base, "select distinct provider, price_source from fct_cloud_price_current")
    sources = set(zip(sources["provider"], sources["price_source"], strict=False))
    assert {("azure", "api"), ("aws", "api"), ("gcp", "api"), ("oci", "api"), ("gcp", "list"), ("oci", "list"),
            ("gcp", "catalog"), ("lambda", "catalog"), ("runpod", "catalog")} <= sources
    assert not any(provider.endswith("-list") or provider.startswith("skypilot") for provider, _ in sources)
    p5 = query(base, "select * from fct_cloud_price_current where provider='aws' and sku='p5.48xlarge' "
                     "and region='us-east-1' and pricing_model='on_demand'")
    assert p5["price_per_hour_usd"].to_list() == [pytest.approx(55.04)]

    # trap rows: quarantined with a reason, never prices
    quarantine = query(base, "select * from fct_quarantine where source like 'prices/%'")
    windows = quarantine.filter(pl.col("payload").str.contains("102.736"))
    assert windows.height == 1 and "Windows" in windows["reason"][0]
    assert windows["partition"][0] == f"azure-{DAY2}"
    low = quarantine.filter(pl.col("payload").str.contains("41.094"))
    assert low.height == 1 and "Low Priority" in low["reason"][0]
    licence = quarantine.filter(pl.col("record") == "B111824")
    assert licence.height == 1 and "licence" in licence["reason"][0]
    prices = query(base, "select * from fct_cloud_price")
    assert prices.filter(pl.col("price_per_hour_usd").is_in([102.736, 41.094])).is_empty()
    assert prices.filter(pl.col("raw_ref").str.contains("B111824")).is_empty()

    # raw responses kept as fetched
    raw = base / "raw" / "prices"
    assert (raw / "azure" / DAY2 / "page_002.json").is_file()
    assert (raw / "aws" / DAY2 / "offer_us-east-1.json").read_bytes() == shared("aws_offer_ec2_us-east-1_subset.json")
    # The key travels in a header, never in the URL (URLs end up in error messages and logs).
    assert all(h.get("x-goog-api-key") == "test-key" and "test-key" not in path
               for _m, path, h in server.requests_for(GCP_TPU))

    # the CLI's cheapest-per-provider query
    from pipelines.cli import main

    assert main(["prices", "--accelerator", "nvidia-h100-sxm-80gb", "--warehouse-dir", str(base)]) == 0
    out = capsys.readouterr().out
    assert "Standard_ND96isr_H100_v5" in out and "12.29" in out and "BM.GPU.H100.8" in out


def test_429_then_success(site):
    server, base = site
    server.script(AZURE, [Status(429, retry_after="0")])
    result = run([azure_prices], DAY2, base)
    assert result.success, run_error(result)[0]
    assert len(server.requests_for(AZURE)) == 3  # 429, page 1, page 2
    assert (base / "staging" / "cloud_prices" / f"azure-{DAY2}.parquet").is_file()


def test_500s_until_retries_run_out_keep_previous_snapshot(site):
    server, base = site
    instance = dg.DagsterInstance.ephemeral()
    assert run([oci_prices], DAY1, base, instance).success
    server.script(OCI, [Status(500)] * 3)
    result = run([oci_prices], DAY2, base, instance)
    assert not result.success
    message = run_error(result)[0]
    assert "oci" in message and "gave up after 3 attempts" in message and "500" in message
    assert not (base / "staging" / "cloud_prices" / f"oci-{DAY2}.parquet").exists()
    warehouse.build(base)
    snapshots = query(base, "select distinct snapshot from fct_cloud_price where provider='oci'")["snapshot"].to_list()
    assert snapshots == [f"oci-{DAY1}"]
    h100 = query(base, "select * from fct_cloud_price_current where provider='oci' and sku='BM.GPU.H100.8'")
    assert h100["price_per_accelerator_hour_usd"].to_list() == [pytest.approx(10.0)]


def test_page_chain_that_never_ends(site):
    server, base = site
    loop = {"Items": [], "NextPageLink": server.url + AZURE + "?$skip=5", "Count": 0}
    server.route(AZURE, lambda *_: json_reply(json.dumps(loop).encode()))
    result = run([azure_prices], DAY2, base)
    assert not result.success
    assert "page chain never ends" in run_error(result)[0]
    assert len(server.requests_for(AZURE)) == 2
    assert not (base / "staging" / "cloud_prices" / f"azure-{DAY2}.parquet").exists()


def test_page_cap(tmp_path):
    from pipelines.lib.io.retry import RetryPolicy
    from pipelines.lib.prices.fetch import PriceFetchError, fetch_azure

    with LoopbackServer() as server:
        def handler(path, query, headers):
            n = int(query.get("$skip", "0")) + 1
            return json_reply(json.dumps({"Items": [], "NextPageLink": f"{server.url}{AZURE}?$skip={n}"}).encode())

        server.route(AZURE, handler)
        with pytest.raises(PriceFetchError, match="page chain never ends"):
            fetch_azure(server.url, tmp_path, RetryPolicy(max_attempts=1), day=DAY2, max_pages=5)


def test_truncated_json_bodies(site):
    server, base = site
    # a body that is complete on the wire but is itself cut off: retrying can't help
    server.route(OCI, lambda *_: json_reply(shared("oci_products.json")[:400]))
    server.route(AWS_OFFER, lambda *_: json_reply(shared("aws_offer_ec2_us-east-1_subset.json")[:3000]))
    for asset, expected in ((oci_prices, "invalid JSON"), (aws_prices, "invalid or truncated JSON")):
        result = run([asset], DAY2, base)
        assert not result.success
        assert expected in run_error(result)[0]
    assert not list((base / "staging").glob("cloud_prices/*.parquet"))


def test_other_currency_is_quarantined(site):
    server, base = site
    page2 = json.loads(shared("azure_retail_prices_page2.json"))
    page2["Items"][0]["currencyCode"] = "EUR"
    serve_fixtures(server, azure_page2=json.dumps(page2).encode())
    result = run([azure_prices], DAY2, base)
    assert result.success, run_error(result)[0]
    quarantine = pl.read_parquet(base / "staging" / "quarantine" / f"prices-azure-{DAY2}.parquet")
    eur = quarantine.filter(pl.col("reason").str.contains("EUR"))
    assert eur.height == 1 and "not USD" in eur["reason"][0]
    assert eur["partition"][0] == f"azure-{DAY2}"


def test_gcp_without_key_is_skipped(site, monkeypatch):
    server, base = site
    monkeypatch.delenv("MLPERF_GCP_API_KEY")
    result = run([gcp_prices], DAY2, base)
    assert result.success
    meta = result.asset_materializations_for_node("gcp_prices")[0].metadata
    assert meta["skipped"].value == "no MLPERF_GCP_API_KEY"
    assert not server.requests_for(GCP_COMPUTE)


def test_refresh_prices_one_failure_does_not_stop_others(site):
    from pipelines.defs.prices.resources import price_sources_from_settings
    from pipelines.runner.price_steps import refresh_prices

    server, base = site
    server.route(OCI, lambda *_: Reply(404, b"gone"))
    outcomes = refresh_prices(dg.DagsterInstance.ephemeral(),
                              {"warehouse_location": WarehouseLocation(directory=str(base))},
                              day=DAY2, price_sources=price_sources_from_settings(max_attempts=2, backoff_seconds=0.01))
    by_name = {o.name: o for o in outcomes}
    assert set(by_name) == {"prices azure", "prices aws", "prices gcp", "prices oci", "prices curated",
                            "prices catalog"}
    assert not by_name["prices oci"].ok and "404" in by_name["prices oci"].detail
    assert all(o.ok for n, o in by_name.items() if n != "prices oci")


def test_full_refresh_publishes_when_one_provider_fails_keeping_its_last_snapshot(site):
    from pipelines.runner.jobs import refresh

    server, base = site
    assert run(PRICE_ASSETS, DAY1, base).success
    server.route(OCI, lambda *_: Reply(500, b"down"))
    summary = refresh(refresh_settings(), prices=True, backoff_seconds=0.01)
    assert not summary.ok and summary.published, summary.render()
    assert "previous data kept for: prices oci" in summary.render()
    current = query(base, "select provider, min(snapshot) as snapshot from fct_cloud_price_current "
                          "where price_source = 'api' group by 1")
    snapshots = dict(zip(current["provider"], current["snapshot"], strict=False))
    assert snapshots["oci"] == f"oci-{DAY1}"
    assert snapshots["azure"] != f"azure-{DAY1}"  # today's snapshot
