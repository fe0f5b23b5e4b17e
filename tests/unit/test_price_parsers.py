"""Price parsers: real figures from ../shared/prices (SOURCES.md) and hand-written edge cases."""

from __future__ import annotations

import importlib.util
import io
import json
import tracemalloc

import polars as pl
import pytest

from pipelines.lib.prices.aws import aws_region_index_urls, parse_aws_offer, parse_aws_offer_path
from pipelines.lib.prices.azure import (
    azure_next_page,
    is_repeating_link,
    parse_azure_retail_page,
    parse_azure_retail_pages,
)
from pipelines.lib.prices.catalog_vms import parse_skypilot_vms_csv
from pipelines.lib.prices.curated import load_curated_prices
from pipelines.lib.prices.gcp import gcp_next_page_token, parse_gcp_skus
from pipelines.lib.prices.normalize import concat_parsed
from pipelines.lib.prices.oci import parse_oci_products
from schemas.prices import CloudPriceRow
from schemas.quarantine import QuarantineRow
from support.paths import FIXTURES, PROJECT_ROOT, SHARED_PRICES

SHARED_PRICES = SHARED_PRICES
FIXTURES = FIXTURES / "prices"
needs_shared = pytest.mark.skipif(not SHARED_PRICES.is_dir(),
                                  reason=f"shared price fixtures not found at {SHARED_PRICES}")


def shared(name: str) -> bytes:
    return (SHARED_PRICES / name).read_bytes()


def own(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def row(prices: pl.DataFrame, **where) -> dict:
    found = prices.filter(pl.all_horizontal([pl.col(k) == v for k, v in where.items()]))
    assert found.height == 1, f"expected one row for {where}, got {found.height}"
    return found.row(0, named=True)


def reasons(quarantine: pl.DataFrame) -> list[str]:
    return quarantine["reason"].to_list()


def assert_valid(result) -> None:
    CloudPriceRow.validate(result.prices)
    QuarantineRow.validate(result.quarantine)
    assert result.quarantine.null_count().sum_horizontal().sum() == 0  # a parser always names file, record, payload


# --- Azure -----------------------------------------------------------------------------------

@needs_shared
def test_azure_nd96isr_h100_v5_eastus_on_demand():
    result = parse_azure_retail_page(shared("azure_retail_prices_page1.json"), file="page1.json")
    assert_valid(result)
    h100 = row(result.prices, sku="Standard_ND96isr_H100_v5", region="eastus", pricing_model="on_demand")
    assert h100["price_per_hour_usd"] == pytest.approx(98.32)
    assert h100["accelerators_per_instance"] == 8
    assert h100["price_per_accelerator_hour_usd"] == pytest.approx(12.29)
    assert h100["accelerator"] == "nvidia-h100-sxm-80gb"
    assert row(result.prices, sku="Standard_ND96isr_H100_v5", region="westus",
               pricing_model="on_demand")["price_per_hour_usd"] == pytest.approx(127.816)


@needs_shared
def test_azure_traps_windows_and_low_priority_are_quarantined_spot_kept_as_spot():
    prices, quarantine = parse_azure_retail_page(shared("azure_retail_prices_page1.json"), file="page1.json")
    payloads = [json.loads(p) for p in quarantine["payload"]]
    by_price = {p["retailPrice"]: r for p, r in zip(payloads, reasons(quarantine), strict=False)}
    assert "Windows" in by_price[102.736]
    assert "Low Priority" in by_price[41.094]
    assert set(quarantine["source"]) == {"prices/azure"} and set(quarantine["file"]) == {"page1.json"}
    # the Linux Spot meter is a clean spot price: kept, labelled spot, never on_demand
    spot = row(prices, sku="Standard_ND96isr_H100_v5", region="eastus", pricing_model="spot")
    assert spot["price_per_hour_usd"] == pytest.approx(18.169536)
    assert 102.736 not in prices["price_per_hour_usd"].to_list()
    assert 41.094 not in prices["price_per_hour_usd"].to_list()
    # on request, spot is quarantined instead
    _, strict = parse_azure_retail_page(shared("azure_retail_prices_page1.json"), keep_spot=False)
    assert any("Spot" in r for r in reasons(strict))


@needs_shared
def test_azure_two_pages_a100():
    result = parse_azure_retail_pages([("page1.json", shared("azure_retail_prices_page1.json")),
                                       ("page2.json", shared("azure_retail_prices_page2.json"))])
    assert result.prices.height == 9
    a100 = row(result.prices, sku="Standard_ND96amsr_A100_v4", region="southcentralus")
    assert a100["price_per_hour_usd"] == pytest.approx(39.324)
    assert a100["accelerator"] == "nvidia-a100-sxm-80gb"
    a100_40 = row(result.prices, sku="Standard_ND96asr_v4", region="westus2")
    assert a100_40["price_per_accelerator_hour_usd"] == pytest.approx(27.197 / 8)
    assert a100_40["accelerator"] == "nvidia-a100-sxm-40gb"


@needs_shared
def test_azure_paging_links():
    assert azure_next_page(shared("azure_retail_prices_page1.json")).startswith("https://prices.azure.com")
    assert azure_next_page(shared("azure_retail_prices_page2.json")) is None
    seen: set[str] = set()
    link = azure_next_page(shared("azure_retail_prices_page1.json"))
    assert not is_repeating_link(link, seen)
    assert is_repeating_link(link, seen)
    assert is_repeating_link(link.replace(":443", ""), seen)  # same page, default port spelled out or not


def test_azure_edge_cases():
    result = parse_azure_retail_page(own("azure_edge_page.json"), file="edge.json")
    assert_valid(result)
    q = dict(zip(result.quarantine["record"], reasons(result.quarantine), strict=False))
    assert "EUR" in q["edge-eur"]
    assert "unknown unit" in q["edge-month"]
    assert "zero" in q["edge-zero"]
    assert "DevTestConsumption" in q["edge-devtest"]
    assert "no accelerator alias" in q["edge-unknown-gpu"]
    assert result.skipped_non_accelerator == 1  # Standard_D2s_v3 is not a GPU VM
    # a reservation's retailPrice covers the whole term: 87600 / 8760 h = 10 USD/h
    assert row(result.prices, pricing_model="reserved_1y")["price_per_hour_usd"] == pytest.approx(10.0)
    assert row(result.prices, pricing_model="savings_plan_3y")["price_per_hour_usd"] == pytest.approx(16.0)
    assert result.prices.height + result.quarantine.height + result.skipped_non_accelerator == 8 + 2


def test_azure_truncated_body_is_a_clear_error():
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_azure_retail_page(own("azure_edge_page.json")[:200])
    with pytest.raises(ValueError, match="Items"):
        parse_azure_retail_page(b'{"value": []}')


def test_duplicate_keys_across_pages_are_quarantined():
    body = own("azure_edge_page.json")
    combined = concat_parsed([parse_azure_retail_page(body), parse_azure_retail_page(body)], source="prices/azure")
    assert combined.prices.height == 4
    assert sum("duplicate" in r for r in reasons(combined.quarantine)) == 4


# --- AWS -------------------------------------------------------------------------------------

@needs_shared
def test_aws_offer_subset_prices():
    result = parse_aws_offer_path(SHARED_PRICES / "aws_offer_ec2_us-east-1_subset.json")
    assert_valid(result)
    expected = {"p4d.24xlarge": 21.957642, "p4de.24xlarge": 27.44705, "p5.48xlarge": 55.04,
                "p5en.48xlarge": 63.296, "p6-b200.48xlarge": 113.9328, "trn1.32xlarge": 21.5}
    got = dict(zip(result.prices["sku"], result.prices["price_per_hour_usd"], strict=False))
    assert got == pytest.approx(expected)
    p5 = row(result.prices, sku="p5.48xlarge")
    assert (p5["region"], p5["pricing_model"], p5["accelerator"]) == ("us-east-1", "on_demand", "nvidia-h100-sxm-80gb")
    assert p5["price_per_accelerator_hour_usd"] == pytest.approx(6.88)
    assert p5["raw_ref"] == "FIXTURESKU000003.JRTCKXETXF.6YS6EN2CT7"
    # Trainium: the offer says gpu=0; the alias table knows trn1.32xlarge has 16 chips
    assert row(result.prices, sku="trn1.32xlarge")["price_per_accelerator_hour_usd"] == pytest.approx(21.5 / 16)
    assert row(result.prices, sku="p6-b200.48xlarge")["accelerator"] == "nvidia-b200"
    assert result.quarantine.is_empty()


def test_aws_offer_edge_cases():
    result = parse_aws_offer_path(FIXTURES / "aws_offer_edge.json")
    assert_valid(result)
    q = dict(zip(result.quarantine["record"], reasons(result.quarantine), strict=False))
    assert "Windows" in q["EDGESKU000000002"]
    assert "no accelerator alias" in q["EDGESKU000000004"]
    assert "CNY" in q["EDGESKU000000006.JRTCKXETXF.6YS6EN2CT7"]
    assert "All Upfront" in q["EDGESKU000000001.6QCMYABX3D"]
    assert result.skipped_non_accelerator == 2  # m5.large and an EBS volume
    models = dict(zip(result.prices["pricing_model"], result.prices["price_per_hour_usd"], strict=False))
    assert models == pytest.approx({"on_demand": 55.04, "reserved_1y": 40.0, "reserved_3y": 25.0})
    on_demand_only = parse_aws_offer_path(FIXTURES / "aws_offer_edge.json", include_reserved=False)
    assert on_demand_only.prices["pricing_model"].to_list() == ["on_demand"]


@pytest.mark.parametrize("chunk_size", [1, 13, 4096])
def test_aws_offer_chunk_boundaries_do_not_matter(chunk_size):
    body = own("aws_offer_edge.json")
    result = parse_aws_offer(io.BytesIO(body), chunk_size=chunk_size)
    assert sorted(result.prices["price_per_hour_usd"].to_list()) == pytest.approx([25.0, 40.0, 55.04])
    assert result.quarantine.height == 4


@pytest.mark.parametrize("cut", [0, 150, 1500, -400, -3])
def test_aws_truncated_offer_raises_value_error(cut):
    body = own("aws_offer_edge.json").rstrip()
    with pytest.raises(ValueError, match="AWS offer file"):
        parse_aws_offer(io.BytesIO(body[:cut] if cut else b""), file="offer.json", chunk_size=64)


def test_aws_region_index_urls():
    urls = aws_region_index_urls(own("aws_region_index.json"), "http://127.0.0.1:8123/")
    assert urls == {
        "us-east-1": "http://127.0.0.1:8123/offers/v1.0/aws/AmazonEC2/20260101000000/us-east-1/index.json",
        "eu-west-1": "http://127.0.0.1:8123/offers/v1.0/aws/AmazonEC2/20260101000000/eu-west-1/index.json",
    }
    with pytest.raises(ValueError):
        aws_region_index_urls(b'{"regions": {"x": {}}}', "http://h")


def _load_benchmark():
    path = PROJECT_ROOT / "benchmarks" / "aws_offer_stream.py"
    spec = importlib.util.spec_from_file_location("aws_offer_stream", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_aws_offer_is_streamed_in_bounded_memory(tmp_path):
    bench = _load_benchmark()
    path = tmp_path / "offer.json"
    counts = bench.write_offer_file(path, size_mb=12)
    size = path.stat().st_size
    assert size > 10_000_000
    tracemalloc.start()
    try:
        with path.open("rb") as stream:  # small chunks: the chunk copies are the constant part of the peak
            result = parse_aws_offer(stream, chunk_size=64 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size / 10, f"peak {peak} bytes for a {size}-byte file: not streamed"
    # each generated accelerator type appears in several Linux on-demand products: one price row
    # per key, the other identical-key rows are quarantined as duplicates, not lost
    assert set(result.prices["sku"]) == {"p5.48xlarge", "p4d.24xlarge", "p4de.24xlarge", "trn1.32xlarge"}
    assert result.skipped_non_accelerator == counts["products"] - counts["accelerator_products"]


# --- GCP -------------------------------------------------------------------------------------

@needs_shared
def test_gcp_tpu_per_chip_prices():
    result = parse_gcp_skus(shared("gcp_billing_skus_tpu.json"), file="tpu.json")
    assert_valid(result)
    for region in ("us-central1", "us-east1", "us-east5"):
        assert row(result.prices, accelerator="google-tpu-v5p", region=region)["price_per_hour_usd"] == pytest.approx(4.2)
        assert row(result.prices, accelerator="google-tpu-v6e", region=region)["price_per_hour_usd"] == pytest.approx(2.7)
    assert row(result.prices, accelerator="google-tpu-v5p", region="europe-west4")["price_per_hour_usd"] == pytest.approx(4.2525)
    assert row(result.prices, accelerator="google-tpu-v6e", region="asia-northeast1")["price_per_hour_usd"] == pytest.approx(3.24)
    assert row(result.prices, accelerator="google-tpu-v5e", region="europe-west4")["price_per_hour_usd"] == pytest.approx(1.56)
    assert set(result.prices["accelerators_per_instance"]) == {1}
    assert gcp_next_page_token(shared("gcp_billing_skus_tpu.json")) is None


@needs_shared
def test_gcp_gpu_prices():
    prices, quarantine = parse_gcp_skus(shared("gcp_billing_skus_compute_gpu.json"))
    assert quarantine.is_empty()
    expected = {"nvidia-h100-sxm-80gb": 9.79655, "nvidia-a100-sxm-40gb": 2.93391,
                "nvidia-h200-141gb": 9.31174, "nvidia-b200": 11.277}
    assert dict(zip(prices["accelerator"], prices["price_per_accelerator_hour_usd"], strict=False)) == pytest.approx(expected)
    assert row(prices, accelerator="nvidia-h100-sxm-80gb")["region"] == "us-east4"


def test_gcp_edge_cases():
    result = parse_gcp_skus(own("gcp_edge_skus.json"))
    assert_valid(result)
    q = dict(zip(result.quarantine["record"], reasons(result.quarantine), strict=False))
    assert "EUR" in q["EDGE-EUR"]
    assert "unknown unit" in q["EDGE-MONTH"]
    assert "Dynamic Workload Scheduler" in q["EDGE-DWS"]
    assert result.skipped_non_accelerator == 1
    assert row(result.prices, raw_ref="EDGE-SPOT")["pricing_model"] == "spot"
    v5p_slice = row(result.prices, raw_ref="EDGE-SLICE")  # a v5p-8 slice is 4 chips
    assert v5p_slice["accelerators_per_instance"] == 4
    assert v5p_slice["price_per_accelerator_hour_usd"] == pytest.approx(4.2)
    assert gcp_next_page_token(own("gcp_edge_skus.json")) == "EDGE-NEXT-TOKEN"
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_gcp_skus(own("gcp_edge_skus.json")[:300])


# --- OCI -------------------------------------------------------------------------------------

@needs_shared
def test_oci_per_gpu_prices_times_shape_gpus():
    result = parse_oci_products(shared("oci_products.json"))
    assert_valid(result)
    expected = {"BM.GPU.H100.8": 80.0, "BM.GPU.H200.8": 80.0, "BM.GPU.A100-v2.8": 32.0,
                "BM.GPU.MI300X.8": 48.0, "BM.GPU.B200.8": 112.0, "BM.GPU4.8": 24.4}
    assert dict(zip(result.prices["sku"], result.prices["price_per_hour_usd"], strict=False)) == pytest.approx(expected)
    assert row(result.prices, sku="BM.GPU.H100.8")["price_per_accelerator_hour_usd"] == pytest.approx(10.0)
    assert row(result.prices, sku="BM.GPU.MI300X.8")["accelerator"] == "amd-mi300x"
    assert result.quarantine["record"].to_list() == ["B111824"]
    assert "licence" in reasons(result.quarantine)[0]


def test_oci_edge_cases():
    result = parse_oci_products(own("oci_edge_products.json"))
    q = dict(zip(result.quarantine["record"], reasons(result.quarantine), strict=False))
    assert "no USD price" in q["EDGE-EUR"]
    assert "no known shape" in q["EDGE-UNKNOWN"]
    assert "zero" in q["EDGE-ZERO"]
    assert result.skipped_non_accelerator == 1 and result.prices.is_empty()


# --- curated list prices and SkyPilot cross-checks ---------------------------------------------

def test_curated_list_prices():
    result = load_curated_prices()
    assert_valid(result)
    assert result.quarantine.is_empty()
    assert result.prices["source_url"].str.starts_with("https://").all()
    v5p = row(result.prices, accelerator="google-tpu-v5p", region="us-east5", pricing_model="on_demand")
    assert v5p["price_per_accelerator_hour_usd"] == pytest.approx(4.20)
    assert row(result.prices, accelerator="google-tpu-v6e", pricing_model="cud_3y")["price_per_hour_usd"] == pytest.approx(1.22)


def test_curated_row_without_source_is_quarantined(tmp_path):
    path = tmp_path / "curated.csv"
    header = (FIXTURES.parents[2] / "pipelines/lib/prices/curated_list_prices.csv").read_text().splitlines()[0]
    path.write_text(header + "\ngcp,tpu-v5e chip,us,on_demand,google-tpu-v5e,1,1.2,USD,chip-hour,2026-01-01,,,,no source\n")
    result = load_curated_prices(path)
    assert result.prices.is_empty() and "source" in reasons(result.quarantine)[0]


@needs_shared
def test_skypilot_subsets_through_the_catalog_parser():
    """The older SkyPilot subsets (../shared/prices/skypilot) read by the catalog parser: traps quarantined."""
    gcp = parse_skypilot_vms_csv(shared("skypilot/gcp_vms.subset.csv"), "gcp", file="gcp_vms.subset.csv")
    assert_valid(gcp)
    assert any("placeholder price 700.0" in r for r in reasons(gcp.quarantine))
    assert 700.0 not in gcp.prices["price_per_hour_usd"].to_list()
    assert set(gcp.prices["provider"]) == {"gcp"} and set(gcp.prices["price_source"]) == {"catalog"}
    assert row(gcp.prices, sku="tpu-v5p-8", region="us-east5")["price_per_accelerator_hour_usd"] == pytest.approx(4.2)
    assert row(gcp.prices, sku="tpu-v6e-256", region="us-central1")["accelerators_per_instance"] == 256

    azure = parse_skypilot_vms_csv(shared("skypilot/azure_vms.subset.csv"), "azure")
    assert any("AcceleratorCount 12" in r for r in reasons(azure.quarantine))
    assert "Standard_ND96isr_H100_v5" not in azure.prices["sku"].to_list()

    aws = parse_skypilot_vms_csv(shared("skypilot/aws_vms.subset.csv"), "aws")
    assert any("p5e.48xlarge" in json.loads(p).get("InstanceType", "") and "no on-demand price" in r
               for r, p in zip(reasons(aws.quarantine), aws.quarantine["payload"], strict=False))
    assert row(aws.prices, sku="p4de.24xlarge", region="us-east-1")["price_per_hour_usd"] == pytest.approx(40.96575)

    oci = parse_skypilot_vms_csv(shared("skypilot/oci_vms.subset.csv"), "oci")
    assert row(oci.prices, sku="BM.GPU4.8")["price_per_hour_usd"] == pytest.approx(24.4)


def test_curated_rows_are_list_prices_of_their_cloud_with_the_figure_as_quoted(tmp_path):
    result = load_curated_prices()
    assert set(result.prices["price_source"]) == {"list"}
    assert set(result.prices["provider"]) == {"gcp", "oci"}  # Google's list prices are provider gcp, not gcp-list
    gb200 = row(result.prices, provider="oci", accelerator="nvidia-gb200")
    assert gb200["price_per_accelerator_hour_usd"] == pytest.approx(16.0) and gb200["unit"] == "GPU Per Hour"
    for accelerator, price in (("nvidia-gb300", 18.0), ("nvidia-b300", 15.0), ("amd-mi355x", 8.6)):
        assert row(result.prices, accelerator=accelerator)["price_per_accelerator_hour_usd"] == pytest.approx(price)
    import csv

    with (FIXTURES.parents[2] / "pipelines/lib/prices/curated_list_prices.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert all(r["price_as_quoted"] and r["source_url"] and r["source_date"] for r in rows)
    # each quote holds the figure of its row: "$4.2000 per chip-hour" or OCI's {"value": 16}
    import re

    for r in rows:
        quoted = re.search(r'\$([0-9.]+)|"value": ([0-9.]+)', r["price_as_quoted"])
        assert quoted, r["price_as_quoted"]
        assert float(quoted.group(1) or quoted.group(2)) == pytest.approx(float(r["price_per_hour_usd"])), r
    # an accelerator dim_accelerator does not know is quarantined, never a price
    path = tmp_path / "curated.csv"
    header = ",".join(rows[0].keys())
    path.write_text(header + "\noci,OCI - Compute - GPU - X9,global,on_demand,nvidia-x9,1,9,USD,GPU Per Hour,"
                    "2026-08-14,https://example.invalid,2026-08-22,9 USD,unknown part\n")
    bad = load_curated_prices(path)
    assert bad.prices.is_empty() and "not a dim_accelerator key" in reasons(bad.quarantine)[0]
