"""The SkyPilot catalog price source over real HTTP on 127.0.0.1, the cost marts' source precedence and
coverage over a hand-made DuckDB, and the availability / native-cloud rule."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest

from pipelines.lib.io.http import RetryPolicy
from pipelines.lib.mlperf.systems import availability_category
from pipelines.lib.prices.catalog import (
    CATALOG_CLOUDS,
    catalog_path,
    parse_skypilot_vms_csv,
)
from pipelines.lib.prices.fetch import PriceFetchError, fetch_catalog
from pipelines.lib.reference.seeds import load_seeds
from pipelines.lib.warehouse.models import load_models, model_order
from schemas.prices import CloudPriceRow
from schemas.quarantine import QuarantineRow
from support.http_server import LoopbackServer, Reply
from support.marts import sql_test_failures, submitters_of
from support.price_site import (
    CATALOG_ROOT,
    DAY2,
    catalog_paths,
    csv_reply,
    serve_catalog,
)

needs_catalog = pytest.mark.skipif(not CATALOG_ROOT.is_dir(),
                                   reason=f"SkyPilot catalog fixtures not found at {CATALOG_ROOT}")
POLICY = RetryPolicy(max_attempts=2, backoff_seconds=0.01)


def one(prices: pl.DataFrame, **where) -> dict:
    found = prices.filter(pl.all_horizontal([pl.col(k) == v for k, v in where.items()]))
    assert found.height == 1, f"expected one row for {where}, got {found.height}"
    return found.row(0, named=True)


@pytest.fixture(scope="module")
def fetched(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    with LoopbackServer() as server:
        serve_catalog(server)
        parsed, files = fetch_catalog(server.url, raw, POLICY, day=DAY2)
        requested = {path for _m, path, _h in server.requests}
    return parsed, files, requested


@needs_catalog
def test_catalog_fetched_at_the_repository_paths_and_kept_as_fetched(fetched):
    parsed, files, requested = fetched
    assert requested == {"/" + catalog_path(c) for c in CATALOG_CLOUDS}
    assert "/catalogs/v6/azure/vms.csv" in requested and "/catalogs/v7/lambda/vms.csv" in requested
    assert len(files) == len(CATALOG_CLOUDS)
    gcp = next(f for f in files if f.name == "gcp_vms.csv")
    assert gcp.read_bytes() == (CATALOG_ROOT / "catalogs/v7/gcp/vms.csv").read_bytes()
    CloudPriceRow.validate(parsed.prices)
    QuarantineRow.validate(parsed.quarantine)
    assert set(parsed.prices["price_source"]) == {"catalog"}
    assert {"gcp", "azure", "oci", "lambda", "runpod", "nebius", "cudo", "seeweb"} <= set(parsed.prices["provider"])


@needs_catalog
def test_catalog_prices_per_accelerator(fetched):
    prices = fetched[0].prices
    # TPU v4 slice: 4 chips in a v4-8, 12.88 per slice-hour → 3.22 per chip-hour (SOURCES.md)
    v4 = one(prices, provider="gcp", sku="tpu-v4-8", region="us-central2")
    assert (v4["accelerator"], v4["accelerators_per_instance"]) == ("google-tpu-v4", 4)
    assert v4["price_per_accelerator_hour_usd"] == pytest.approx(3.22)
    # form factor from the catalog's own naming
    pcie = one(prices, provider="lambda", sku="gpu_1x_h100_pcie", region="us-east-1")
    assert pcie["accelerator"] == "nvidia-h100-pcie-80gb" and pcie["price_per_hour_usd"] == pytest.approx(2.49)
    runpod_a100 = prices.filter((pl.col("provider") == "runpod") & pl.col("sku").str.starts_with("1x_A100-80GB"))
    assert set(runpod_a100["accelerator"]) == {"nvidia-a100-pcie-80gb", "nvidia-a100-sxm-80gb"}
    assert one(prices, provider="seeweb", sku="ECS1GPU11")["accelerator"] == "nvidia-a30"
    assert one(prices, provider="seeweb", sku="ECS1GPU11")["region"] == "unspecified"  # empty Region in the file
    # Azure NC A100 v4 through the accelerator matcher's cloud SKU aliases
    assert set(prices.filter(pl.col("sku") == "Standard_NC24ads_A100_v4")["accelerator"]) == {"nvidia-a100-pcie-80gb"}
    # an auction is not a list price
    assert set(prices.filter(pl.col("provider") == "mithril")["pricing_model"]) == {"spot"}
    # per-zone rows collapse to one price per region
    assert prices.group_by("provider", "sku", "region", "pricing_model").len()["len"].max() == 1


@needs_catalog
def test_catalog_traps_are_quarantined_never_priced(fetched):
    parsed = fetched[0]
    prices, quarantine = parsed.prices, parsed.quarantine
    reasons = quarantine["reason"].to_list()
    assert 700.0 not in prices["price_per_hour_usd"].to_list()
    assert any("placeholder price 700.0" in r for r in reasons)
    # RunPod L40S: SpotPrice 0.86 above Price 0.43 → columns swapped, not trusted
    assert prices.filter((pl.col("provider") == "runpod") & (pl.col("accelerator") == "nvidia-l40s")).is_empty()
    assert any("SpotPrice 0.86 above Price 0.43" in r for r in reasons)
    # sentinels are "no spot price", not a trap: primeintellect (99999999) and vast (0.00) rows are priced
    assert not prices.filter(pl.col("provider") == "primeintellect").is_empty()
    assert not prices.filter(pl.col("provider") == "vast").is_empty()
    assert not any("99999999" in r for r in reasons)
    # Azure ND96isr_H100_v5 with AcceleratorCount 12
    assert any("AcceleratorCount 12" in r and "Standard_ND96isr_H100_v5" in r for r in reasons)
    assert "Standard_ND96isr_H100_v5" not in prices["sku"].to_list()
    # GCP GPU rows are the GPU attach price only; ambiguous names are not guessed
    assert prices.filter((pl.col("provider") == "gcp") & ~pl.col("accelerator").str.starts_with("google-tpu")).is_empty()
    assert any(r.startswith("GPU-only price for H100") for r in reasons)
    assert prices.filter(pl.col("provider") == "hyperbolic").is_empty()
    assert any("hyperbolic" in r and "does not say which H100 part" in r for r in reasons)


def test_columns_are_read_by_header_name_not_position():
    lines = ["InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice",
             "gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,23.92,us-east-1,,"]
    shuffled = ["Region,Price,SpotPrice,AcceleratorCount,InstanceType,AcceleratorName",
                "us-east-1,23.92,,8.0,gpu_8x_h100_sxm5,H100"]
    a = parse_skypilot_vms_csv("\n".join(lines), "lambda").prices
    b = parse_skypilot_vms_csv("\r\n".join(shuffled), "lambda").prices
    assert a.drop("raw_ref").to_dicts() == b.drop("raw_ref").to_dicts()
    assert a["price_per_accelerator_hour_usd"].to_list() == [pytest.approx(2.99)]
    with pytest.raises(ValueError, match="missing columns"):
        parse_skypilot_vms_csv("InstanceType,Name,Cost\nx,y,1\n", "lambda")


def test_zones_that_disagree_are_quarantined():
    text = ("InstanceType,AcceleratorName,AcceleratorCount,Price,Region,AvailabilityZone,SpotPrice\n"
            "1x_L40S_SECURE,L40S,1,0.86,US,US-1,\n1x_L40S_SECURE,L40S,1,0.99,US,US-2,\n")
    parsed = parse_skypilot_vms_csv(text, "runpod")
    assert parsed.prices.is_empty() and "disagree" in parsed.quarantine["reason"][0]


@needs_catalog
def test_a_missing_cloud_file_is_quarantined_and_the_rest_read(tmp_path):
    with LoopbackServer() as server:
        serve_catalog(server)
        server.route("/catalogs/v7/lambda/vms.csv", lambda *_: Reply(404, b"gone"))
        server.route("/catalogs/v7/nebius/vms.csv", lambda *_: csv_reply(b"<html>not a csv</html>"))
        parsed, _files = fetch_catalog(server.url, tmp_path, POLICY, day=DAY2)
        assert "lambda" not in set(parsed.prices["provider"]) and "runpod" in set(parsed.prices["provider"])
        lost = parsed.quarantine.filter(pl.col("reason").str.starts_with("catalog file for"))
        assert sorted(lost["file"]) == ["catalogs/v7/lambda/vms.csv", "catalogs/v7/nebius/vms.csv"]
        assert any("404" in r for r in lost["reason"]) and any("missing columns" in r for r in lost["reason"])
        for path in catalog_paths():
            server.route(path, lambda *_: Reply(404, b"gone"))
        with pytest.raises(PriceFetchError, match="none of 14 vms.csv files could be read \\(gcp: HTTP 404"):
            fetch_catalog(server.url, tmp_path, POLICY, day=DAY2)
        with pytest.raises(PriceFetchError, match="no catalog file known for \\['nowhere'\\]"):
            fetch_catalog(server.url, tmp_path, POLICY, ("gcp", "nowhere"), day=DAY2)


# --- one provider per cloud, native cloud, availability ------------------------------------------

def native_clouds(submitters: list[str]) -> set[tuple[str, str]]:
    """(submitter, provider) pairs of the one native-cloud rule, the model int_submitter_cloud."""
    con = duckdb.connect()
    load_seeds(con)
    con.execute("create table stg_mlperf_systems (submitter varchar)")
    con.executemany("insert into stg_mlperf_systems values (?)", [[s] for s in submitters])
    con.execute("create table stg_mlperf_runs as select * from stg_mlperf_systems where false")
    return set(con.execute(load_models()["int_submitter_cloud"].sql).fetchall())


def test_native_cloud_rule_and_availability():
    pairs = native_clouds(["Google", "Azure-HazyResearch", "IBM+CoreWeave+NVIDIA", "Nebius", "NVIDIA", "Oracle",
                           "Dell", "Microsoft Azure", "Amazon", "AWS"])
    assert {("Google", "gcp"), ("Azure-HazyResearch", "azure"), ("IBM+CoreWeave+NVIDIA", "coreweave"),
            ("Nebius", "nebius"), ("Oracle", "oci"), ("Microsoft Azure", "azure"), ("Amazon", "aws"),
            ("AWS", "aws")} <= pairs
    assert not {p for p in pairs if p[0] in ("NVIDIA", "Dell")}  # not clouds
    assert not {p for p in pairs if p[1] == "gcp-list"} and ("Google", "aws") not in pairs
    # Google Cloud TPU v1.1/v2.0 systems say just "available": dim_system decides cloud or on-premise
    assert availability_category("available") == "available"
    assert availability_category("Available on-premise") == "on-premise"
    assert availability_category("Available cloud") == "cloud"
    assert availability_category("research") == "research"
    assert availability_category("Preview") == "preview"


# --- cost marts: source precedence and coverage ------------------------------------------------

PRICES = [  # provider, sku, region, pricing_model, accelerator, per instance, $/h, price_source
    ("gcp", "TpuV5p chip", "us-east5", "on_demand", "google-tpu-v5p", 1, 4.20, "api"),
    ("gcp", "tpu-v5p chip", "us-east5", "on_demand", "google-tpu-v5p", 1, 4.20, "list"),  # same offer, list
    ("gcp", "tpu-v5p chip", "us-east5", "cud_1y", "google-tpu-v5p", 1, 2.94, "list"),  # no api row for cud_1y
    ("gcp", "tpu-v5p-8", "us-east5", "on_demand", "google-tpu-v5p", 4, 16.80, "catalog"),
    ("gcp", "tpu-v4-8", "us-central2", "on_demand", "google-tpu-v4", 4, 12.88, "catalog"),
    ("gcp", "tpu-v4-16", "us-central2", "on_demand", "google-tpu-v4", 8, 25.76, "catalog"),  # same per-chip price
    ("azure", "Standard_ND96isr_H100_v5", "eastus", "on_demand", "nvidia-h100-sxm-80gb", 8, 98.32, "api"),
    ("azure", "Standard_ND96isr_H100_v5", "eastus", "on_demand", "nvidia-h100-sxm-80gb", 8, 50.00, "catalog"),
    ("lambda", "gpu_8x_h100_sxm5", "us-east-1", "on_demand", "nvidia-h100-sxm-80gb", 8, 23.92, "catalog"),
]
RESULTS = [  # round, submitter, system, accelerator, model name, count, minutes
    ("v4.1", "Google", "tpu-v5p-512", "google-tpu-v5p", "TPU-v5p", 512, 100.0),
    ("v4.0", "Google", "tpu-v4-1024", "google-tpu-v4", "TPU", 1024, 60.0),
    ("v4.1", "NVIDIA", "dgxh100", "nvidia-h100-sxm-80gb", "NVIDIA H100-SXM5-80GB", 64, 30.0),
    ("v4.1", "tinycorp", "tinybox", "nvidia-geforce-rtx-4090", "NVIDIA GeForce RTX 4090", 6, 300.0),
    ("v4.1", "Intel", "xeon", None, "N/A", 0, 500.0),
]


@pytest.fixture()
def marts():
    con = duckdb.connect()
    con.execute("create table fct_cloud_price_current (provider varchar, sku varchar, region varchar, "
                "pricing_model varchar, accelerator varchar, accelerators_per_instance integer, "
                "price_per_hour_usd double, price_per_accelerator_hour_usd double, effective_date date, "
                "fetched_at timestamp, source_url varchar, price_source varchar)")
    con.executemany("insert into fct_cloud_price_current values (?, ?, ?, ?, ?, ?, ?, ?, null, "
                    "timestamp '2026-11-29', 'https://example.invalid', ?)",
                    [(p, s, r, m, a, n, h, h / n, src) for p, s, r, m, a, n, h, src in PRICES])
    con.execute("create table dim_system (round varchar, submitter varchar, system varchar, system_name varchar, "
                "accelerator varchar, accelerator_model_name varchar, availability_category varchar)")
    con.execute("create table fct_training_result (round varchar, submitter varchar, system varchar, "
                "benchmark varchar, division varchar, availability varchar, accelerator_count integer, "
                "score_minutes double)")
    # a result whose systems file was quarantined: no dim_system row
    con.execute("insert into fct_training_result values ('v4.1', 'Acme', 'lost', 'gpt3', 'closed', null, null, 40.0)")
    for rnd, sub, system, acc, name, n, minutes in RESULTS:
        con.execute("insert into dim_system values (?, ?, ?, ?, ?, ?, 'cloud')", [rnd, sub, system, system, acc, name])
        con.execute("insert into fct_training_result values (?, ?, ?, 'gpt3', 'closed', 'available', ?, ?)",
                    [rnd, sub, system, n, minutes])
    load_seeds(con)
    submitters_of(con)
    models = {k: v for k, v in load_models().items()
              if k in ("int_submitter_cloud", "mart_price_offer", "mart_cost_to_train", "mart_cost_to_train_coverage")}
    for name in model_order(models):
        con.execute(f"create table {name} as {models[name].sql}")
    yield con
    con.close()


def rows(con, sql):
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=False)) for r in cursor.fetchall()]


def test_api_beats_list_beats_catalog_and_no_offer_is_costed_twice(marts):
    got = rows(marts, "select * from mart_cost_to_train order by system, provider, pricing_model, sku")
    v5p = [r for r in got if r["system"] == "tpu-v5p-512"]
    assert [(r["provider"], r["pricing_model"], r["price_source"]) for r in v5p] == [
        ("gcp", "cud_1y", "list"), ("gcp", "on_demand", "api")]
    assert all(r["is_native_cloud"] for r in v5p)
    assert v5p[1]["cost_to_train_usd"] == pytest.approx(100 / 60 * 512 * 4.20)
    v4 = [r for r in got if r["system"] == "tpu-v4-1024"]  # catalog only: one offer, not one per slice size
    assert len(v4) == 1 and v4[0]["price_source"] == "catalog" and v4[0]["is_native_cloud"]
    assert v4[0]["cost_to_train_usd"] == pytest.approx(1.0 * 1024 * 3.22)
    h100 = {(r["provider"], r["price_source"]): r for r in got if r["system"] == "dgxh100"}
    assert set(h100) == {("azure", "api"), ("lambda", "catalog")}  # the catalog never replaces azure's API row
    assert h100[("azure", "api")]["price_per_accelerator_hour_usd"] == pytest.approx(12.29)
    assert not any(r["is_native_cloud"] for r in h100.values())
    assert (h100[("azure", "api")]["provider_kind"], h100[("lambda", "catalog")]["provider_kind"]) == ("hyperscaler", "neocloud")
    # the generated grain tests (mart_cost_to_train_unique, ...) and every file of sql/tests on the two marts
    assert sql_test_failures(marts, {"mart_cost_to_train", "mart_cost_to_train_coverage"}) == []


def test_coverage_says_why_results_have_no_cost(marts):
    got = {(r["round"], r["accelerator"]): r for r in rows(marts, "select * from mart_cost_to_train_coverage")}
    assert got[("v4.1", "google-tpu-v5p")]["cost_coverage"] == 1 and got[("v4.1", "google-tpu-v5p")]["no_cost_reason"] is None
    assert got[("v4.0", "google-tpu-v4")]["priced_by"] == "gcp (catalog)"
    rtx = got[("v4.1", "nvidia-geforce-rtx-4090")]
    assert (rtx["scored_results"], rtx["costed_results"], rtx["uncosted_results"]) == (1, 0, 1)
    assert rtx["uncosted_systems"] == "tinycorp/tinybox" and got[("v4.1", "google-tpu-v5p")]["uncosted_systems"] is None
    assert rtx["no_cost_reason"].startswith("no public price found for this accelerator; searched: ")
    for source in ("azure (api)", "azure (catalog)", "gcp (list)", "lambda (catalog)"):
        assert source in rtx["no_cost_reason"]
    cpu = got[("v4.1", "N/A")]
    assert not cpu["accelerator_is_mapped"] and "not mapped" in cpu["no_cost_reason"]
    lost = got[("v4.1", "(no systems file)")]
    assert not lost["has_system_file"] and lost["uncosted_results"] == 1
    assert "no usable systems description" in lost["no_cost_reason"]
    total = marts.execute("select sum(costed_results) / sum(scored_results) from mart_cost_to_train_coverage "
                          "where round = 'v4.1'").fetchone()[0]
    assert total == pytest.approx(2 / 5)
