"""The SkyPilot catalog price source over real HTTP on 127.0.0.1 (its versions and clouds discovered: the
repository's tree, a mirror folder, probing), the cost marts' source precedence and coverage over a hand-made
DuckDB, and the availability / native-cloud rule."""

from __future__ import annotations

import csv
import json
import re
import shutil

import duckdb
import polars as pl
import pytest

from pipelines.lib.io.retry import RetryPolicy
from pipelines.lib.mlperf.systems import availability_category
from pipelines.lib.prices.catalog import (
    FALLBACK_VERSIONS,
    MAX_PROBES,
    PROBE_AHEAD,
    RECORD_NAME,
    SKIPPED_CLOUDS,
    provider_kinds,
    version_number,
)
from pipelines.lib.prices.catalog_fetch import fetch_catalog
from pipelines.lib.prices.catalog_vms import parse_skypilot_vms_csv
from pipelines.lib.prices.fetch import PriceFetchError
from pipelines.lib.reference.seeds import load_seeds
from pipelines.lib.warehouse.models import load_models, model_order
from schemas.prices import CloudPriceRow
from schemas.quarantine import QuarantineRow
from support.http_server import LoopbackServer, Reply
from support.marts import sql_test_failures, submitters_of
from support.price_site import (
    CATALOG_ROOT,
    CATALOG_TREE,
    DAY1,
    DAY2,
    catalog_paths,
    csv_reply,
    serve_catalog,
)

needs_catalog = pytest.mark.skipif(not CATALOG_ROOT.is_dir(),
                                   reason=f"SkyPilot catalog fixtures not found at {CATALOG_ROOT}")
POLICY = RetryPolicy(max_attempts=2, backoff_seconds=0.01)
RTX_PRO_6000 = re.compile(r"RTX[ _-]?PRO[ _-]?6000.*", re.I)


def one(prices: pl.DataFrame, **where) -> dict:
    found = prices.filter(pl.all_horizontal([pl.col(k) == v for k, v in where.items()]))
    assert found.height == 1, f"expected one row for {where}, got {found.height}"
    return found.row(0, named=True)


def newest_files(root=CATALOG_ROOT) -> dict[str, str]:
    """cloud → the newest version folder holding its vms.csv, read from the folder itself (what a listing shows)."""
    found: dict[str, str] = {}
    for path in root.glob("catalogs/v*/*/vms.csv"):
        version, cloud = path.parts[-3], path.parts[-2]
        if version_number(version) > version_number(found.get(cloud, "v0")):
            found[cloud] = version
    return found


def vms_rows(version: str, cloud: str, root=CATALOG_ROOT) -> list[dict[str, str]]:
    with (root / "catalogs" / version / cloud / "vms.csv").open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def fetch(server, raw, **kwargs):
    kwargs.setdefault("listing_url", server.url)
    return fetch_catalog(server.url, raw, POLICY, day=kwargs.pop("day", DAY2), **kwargs)


@pytest.fixture(scope="module")
def fetched(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    with LoopbackServer() as server:
        serve_catalog(server)
        parsed, files, report = fetch(server, raw)
        requested = [path for _m, path, _h in server.requests]
    return parsed, files, report, requested, raw


@needs_catalog
def test_versions_and_clouds_come_from_the_catalog_listing(fetched):
    parsed, files, report, requested, raw = fetched
    newest = newest_files()
    top = max(newest.values(), key=version_number)
    expected = {c: v for c, v in newest.items() if c not in SKIPPED_CLOUDS}
    # every cloud the listing shows, each from the newest version that has its file; aws read from its own API
    assert report.newest == top and report.read == expected
    assert report.skipped == {c: SKIPPED_CLOUDS[c] for c in SKIPPED_CLOUDS if c in newest}
    assert {"verda", "daytona", "lium", "spheron", "hyperstack", "jarvislabs", "yotta"} <= set(report.read)
    assert (report.read["verda"], report.read["gcp"], report.read["azure"]) == ("v8", "v7", "v6")
    # one listing request, then exactly one request per cloud: the listing says where each file is, no 404 probing
    assert requested[0].startswith(CATALOG_TREE + "?recursive=1")
    assert sorted(requested[1:]) == sorted(f"/catalogs/{v}/{c}/vms.csv" for c, v in expected.items())
    gcp = next(f for f in files if f.name == "gcp_vms.csv")
    assert gcp.read_bytes() == (CATALOG_ROOT / "catalogs/v7/gcp/vms.csv").read_bytes()  # kept as fetched
    assert (gcp.parent / "listing.json").is_file() and (gcp.parent / "catalog_report.json").is_file()
    CloudPriceRow.validate(parsed.prices)
    QuarantineRow.validate(parsed.quarantine)
    assert set(parsed.prices["price_source"]) == {"catalog"}
    # every row says the version it came from, and whether that is a fallback below the newest
    versions = dict(parsed.prices.group_by("provider").agg(pl.col("catalog_version").unique()).iter_rows())
    assert {p: v for p, v in versions.items()} == {p: [report.read[p]] for p in versions}
    fallback = parsed.prices.filter(pl.col("catalog_fallback"))
    assert set(fallback["provider"]) == {c for c, v in report.read.items() if v != top} & set(versions)
    assert fallback["source_url"].str.contains("/catalogs/v(6|7)/").all()
    # the refresh's line: versions per cloud, and the clouds whose kind nobody has reviewed
    line = report.summary()
    assert f"catalog {top}" in line and "from v7 (no vms.csv in a newer version): gcp, runpod, simplepod" in line
    assert "from v6 (no vms.csv in a newer version): azure, oci" in line and "first catalog discovery" in line
    unknown = sorted(c for c in report.read if c not in provider_kinds())
    assert report.unknown_kind == unknown and "yotta" in unknown
    assert report.warning and any("'yotta'" in w for w in report.warnings())


@needs_catalog
def test_catalog_prices_per_accelerator(fetched):
    prices = fetched[0].prices
    # TPU v4 slice: 4 chips in a v4-8, 12.88 per slice-hour → 3.22 per chip-hour (SOURCES.md)
    v4 = one(prices, provider="gcp", sku="tpu-v4-8", region="us-central2")
    assert (v4["accelerator"], v4["accelerators_per_instance"]) == ("google-tpu-v4", 4)
    assert v4["price_per_accelerator_hour_usd"] == pytest.approx(3.22)
    # form factor from the catalog's own naming (lambda, read from v8: its v8 price, not v7's 2.49)
    pcie = one(prices, provider="lambda", sku="gpu_1x_h100_pcie", region="us-east-1")
    v8 = next(r for r in vms_rows("v8", "lambda") if r["InstanceType"] == "gpu_1x_h100_pcie" and r["Region"] == "us-east-1")
    assert pcie["accelerator"] == "nvidia-h100-pcie-80gb" and pcie["price_per_hour_usd"] == pytest.approx(float(v8["Price"]))
    assert pcie["catalog_version"] == "v8" and pcie["catalog_fallback"] is False
    runpod_a100 = prices.filter((pl.col("provider") == "runpod") & pl.col("sku").str.starts_with("1x_A100-80GB"))
    assert set(runpod_a100["accelerator"]) == {"nvidia-a100-pcie-80gb", "nvidia-a100-sxm-80gb"}
    assert set(runpod_a100["catalog_version"]) == {"v7"} and runpod_a100["catalog_fallback"].all()
    assert one(prices, provider="seeweb", sku="ECS1GPU7", region="it-fr2")["accelerator"] == "nvidia-l40s"
    # Azure NC A100 v4 through the accelerator matcher's cloud SKU aliases (v6)
    assert set(prices.filter(pl.col("sku") == "Standard_NC24ads_A100_v4")["accelerator"]) == {"nvidia-a100-pcie-80gb"}
    # an auction is not a list price
    assert set(prices.filter(pl.col("provider") == "mithril")["pricing_model"]) == {"spot"}
    # per-zone rows collapse to one price per region
    assert prices.group_by("provider", "sku", "region", "pricing_model").len()["len"].max() == 1


@needs_catalog
def test_every_spelling_of_the_new_accelerators_maps_to_one_key(fetched):
    parsed, report = fetched[0], fetched[2]
    prices, quarantine = parsed.prices, parsed.quarantine
    keys = {"B300": "nvidia-b300", "MI355X": "amd-mi355x"}
    seen = {}
    for cloud, version in report.read.items():
        for line, row in enumerate(vms_rows(version, cloud), start=2):
            name = row["AcceleratorName"]
            key = "nvidia-rtx-pro-6000" if RTX_PRO_6000.fullmatch(name) else keys.get(name.upper())
            if key is None:
                continue
            seen.setdefault(key, set()).add((cloud, name))
            ref = f"catalogs/{version}/{cloud}/vms.csv"
            priced = prices.filter((pl.col("provider") == cloud) & pl.col("raw_ref").str.contains(
                rf"^{re.escape(ref)}:(\d+,)*{line}(,\d+)*$"))
            if priced.height:
                assert priced["accelerator"].to_list() == [key], (cloud, name)
            else:  # not priced: for a reason about the price, never because the name was not understood
                held = quarantine.filter(pl.col("record").str.starts_with(f"{ref}:") & pl.col("record").str.contains(
                    rf":(\d+,)*{line}(,\d+)*$"))
                assert held.height == 1 and "not mapped" not in held["reason"][0] and "part it is" not in held["reason"][0]
    # the spellings the v8 rows use, each read: RTXPRO6000S, RTXPro6000, RTX PRO 6000 96GB, RTXPRO6000_PCIE, ...
    spellings = {name for _c, name in seen["nvidia-rtx-pro-6000"]}
    assert {"RTXPRO6000S", "RTXPro6000", "RTX PRO 6000 96GB", "RTXPRO6000_PCIE", "RTXPRO6000_PCIE_BAREMETAL",
            "RTXPRO6000-WK", "RTXPRO6000"} <= spellings
    assert {c for c, _n in seen["nvidia-b300"]} == {"verda", "lium", "daytona"}
    assert {c for c, _n in seen["amd-mi355x"]} == {"daytona"}
    for key in ("nvidia-rtx-pro-6000", "nvidia-b300", "amd-mi355x"):
        assert not prices.filter(pl.col("accelerator") == key).is_empty(), key
    b300 = one(prices, provider="verda", sku="1B300.30V", region="FIN-03")
    assert b300["price_per_accelerator_hour_usd"] == pytest.approx(6.99)


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
    # v8: verda's 2B300.60V has a SpotPrice and no Price; spheron's "H100_NVL" is an 80 GB PCIe card
    assert any("verda" in q["source"] and "2B300.60V" in q["payload"] and "no on-demand price" in q["reason"]
               for q in quarantine.iter_rows(named=True))
    assert "2B300.60V" not in prices["sku"].to_list()
    nvl = quarantine.filter(pl.col("reason").str.contains("H100_NVL") & pl.col("reason").str.contains("not mapped on purpose"))
    assert nvl.height == 2
    assert prices.filter((pl.col("provider") == "spheron") & (pl.col("accelerator") == "nvidia-h100-nvl-94gb")).is_empty()


def test_columns_are_read_by_header_name_not_position():
    lines = ["InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice",
             "gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,23.92,us-east-1,,"]
    shuffled = ["Region,Price,SpotPrice,AcceleratorCount,InstanceType,AcceleratorName,Arch",
                "us-east-1,23.92,,8.0,gpu_8x_h100_sxm5,H100,x86_64"]  # v8 adds Arch
    a = parse_skypilot_vms_csv("\n".join(lines), "lambda").prices
    b = parse_skypilot_vms_csv("\r\n".join(shuffled), "lambda").prices
    assert a.drop("raw_ref").to_dicts() == b.drop("raw_ref").to_dicts()
    assert a["price_per_accelerator_hour_usd"].to_list() == [pytest.approx(2.99)]
    tagged = parse_skypilot_vms_csv("\n".join(lines), "lambda", version="v7", newest="v8").prices
    assert tagged.select("catalog_version", "catalog_fallback").row(0) == ("v7", True)
    with pytest.raises(ValueError, match="missing columns"):
        parse_skypilot_vms_csv("InstanceType,Name,Cost\nx,y,1\n", "lambda")


def test_zones_that_disagree_are_quarantined():
    text = ("InstanceType,AcceleratorName,AcceleratorCount,Price,Region,AvailabilityZone,SpotPrice\n"
            "1x_L40S_SECURE,L40S,1,0.86,US,US-1,\n1x_L40S_SECURE,L40S,1,0.99,US,US-2,\n")
    parsed = parse_skypilot_vms_csv(text, "runpod")
    assert parsed.prices.is_empty() and "disagree" in parsed.quarantine["reason"][0]


def catalog_copy(tmp_path):
    """A private copy of the catalog fixtures, to add versions and clouds to."""
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG_ROOT / "catalogs", root / "catalogs")
    return root


@needs_catalog
def test_a_cloud_new_to_the_catalog_is_read_and_its_unknown_kind_flagged(tmp_path):
    root = catalog_copy(tmp_path)
    new = root / "catalogs/v8/skycloud"  # no code, no reference row names it
    new.mkdir()
    (new / "vms.csv").write_text("InstanceType,AcceleratorName,AcceleratorCount,Price,Region,SpotPrice\r\n"
                                 "8x-B300,B300,8,48.0,eu-1,\r\n1x-RTXPRO6000,RTXPRO6000,1,1.1,eu-1,\r\n")
    with LoopbackServer() as server:
        serve_catalog(server, root)
        parsed, _files, report = fetch(server, tmp_path / "raw")
    mine = parsed.prices.filter(pl.col("provider") == "skycloud")
    assert sorted(mine["accelerator"]) == ["nvidia-b300", "nvidia-rtx-pro-6000"]
    assert mine["price_per_accelerator_hour_usd"].sort().to_list() == [pytest.approx(1.1), pytest.approx(6.0)]
    assert report.read["skycloud"] == "v8" and "skycloud" in report.unknown_kind
    assert "skycloud" in report.summary() and any("'skycloud'" in w for w in report.warnings())
    # said in the row: mart_price_offer gives its kind as unknown, and nobody can book it
    offers = offers_of(parsed.prices)
    sky = [o for o in offers if o["provider"] == "skycloud"]
    assert sky and all(o["provider_kind"] == "unknown" and not o["is_bookable"] for o in sky)
    # a marketplace stays a market price, a neocloud's list price is bookable (kinds from cloud_providers.csv)
    kinds = {o["provider"]: (o["provider_kind"], o["is_bookable"]) for o in offers if o["pricing_model"] == "on_demand"}
    for cloud in ("vast", "lium", "spheron", "shadeform", "primeintellect"):
        assert kinds[cloud] == ("marketplace", False), cloud
    assert kinds["verda"] == ("neocloud", True) and kinds["daytona"] == ("neocloud", True)


def offers_of(prices: pl.DataFrame) -> list[dict]:
    """mart_price_offer's SQL over these prices as the current ones (and the seeds)."""
    con = duckdb.connect()
    load_seeds(con)
    current = prices.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("fetched_at"))
    con.register("current_frame", current.to_arrow())
    con.execute("create table fct_cloud_price_current as select * from current_frame")
    return rows(con, load_models()["mart_price_offer"].sql)


@needs_catalog
def test_a_newer_version_is_read_and_older_files_only_within_the_fallback_window(tmp_path):
    root = catalog_copy(tmp_path)
    newer = root / "catalogs/v9/lambda"
    newer.mkdir(parents=True)
    shutil.copy(root / "catalogs/v8/lambda/vms.csv", newer / "vms.csv")
    with LoopbackServer() as server:
        serve_catalog(server, root)
        _parsed, _files, report = fetch(server, tmp_path / "raw")
        requested = [p for _m, p, _h in server.requests]
    assert report.newest == "v9" and report.read["lambda"] == "v9" and report.read["verda"] == "v8"
    assert report.read["gcp"] == "v7"  # two versions below v9: still read
    # v6 is three below v9: outside the window, said, never read
    assert FALLBACK_VERSIONS == 2 and "azure" not in report.read and "/catalogs/v6/azure/vms.csv" not in requested
    assert "more than the 2 versions below v9" in report.not_found["azure"]


@pytest.mark.slow  # the whole catalog fetched twice
@needs_catalog
def test_the_listing_is_asked_conditionally_and_new_clouds_are_named(tmp_path):
    raw = tmp_path / "raw"
    # a warehouse from before the discovery record: the clouds its last catalog snapshot holds are not new
    earlier = raw / "catalog" / DAY1
    earlier.mkdir(parents=True)
    for cloud in ("gcp", "lambda", "runpod", "vast", "azure", "oci"):
        (earlier / f"{cloud}_vms.csv").write_bytes(b"")
    with LoopbackServer() as server:
        serve_catalog(server)
        _p, _f, first = fetch(server, raw)
        _p, _f, second = fetch(server, raw)
        listings = server.requests_for(CATALOG_TREE)
    assert "daytona" in first.new and "verda" in first.new and "lambda" not in first.new and not first.first
    assert "new: " in first.summary()
    assert second.new == [] and second.read == first.read and "unchanged (304)" in second.how
    assert "if-none-match" not in listings[0][2] and listings[1][2]["if-none-match"]
    record = json.loads((raw / "catalog" / RECORD_NAME).read_text())
    assert record["newest"] == "v8" and record["read"] == first.read


@needs_catalog
def test_a_mirror_folder_is_listed_like_the_repository(fetched, tmp_path):
    report = fetched[2]
    for base in (str(CATALOG_ROOT), CATALOG_ROOT.as_uri()):
        parsed, files, local = fetch_catalog(base, tmp_path / "raw", POLICY, day=DAY2)
        assert local.read == report.read and local.how == "folder listing"
        assert parsed.prices.height == fetched[0].prices.height


@pytest.mark.slow  # the whole catalog fetched three times
@needs_catalog
def test_without_a_listing_versions_are_probed_and_known_clouds_kept(tmp_path):
    raw = tmp_path / "raw"
    with LoopbackServer() as server:
        serve_catalog(server)
        _p, _f, probed = fetch(server, raw, listing_url=None)
        probes = [p for _m, p, _h in server.requests if p.endswith("/common/accelerators.csv")]
        # v1 up: the versions with common/accelerators.csv answer, then PROBE_AHEAD misses end the scan
        newest = version_number(probed.newest)
        assert probed.newest == "v8" and len(probes) == newest + PROBE_AHEAD
        named = set()
        for version in ("v7", "v8"):
            text = (CATALOG_ROOT / f"catalogs/{version}/common/accelerators.csv").read_text()
            named |= {n.lower() for n in re.findall(r"'([^']+)'", text)}
        files = newest_files()
        assert set(probed.read) == {c for c in named if c in files and c not in SKIPPED_CLOUDS}
        assert "verda" not in probed.read and "probed" in probed.how  # named nowhere: not seen without a listing
        # a listing once, then probing again: the clouds read before are kept, the scan starts at v8
        _p, _f, listed = fetch(server, raw, day="2026-11-30")
        before = len(server.requests)
        _p, _f, again = fetch(server, raw, listing_url=None, day="2026-12-01")
        probes = [(p, h) for _m, p, h in server.requests[before:] if p.endswith("/common/accelerators.csv")]
        assert again.read == listed.read and again.new == [] and again.gone == []
        assert [p for p, _h in probes] == [f"/catalogs/v{n}/common/accelerators.csv" for n in range(8, 9 + PROBE_AHEAD)]
        assert "if-none-match" in probes[0][1]  # v8 answered before: asked conditionally (a 304 costs no body)


@needs_catalog
def test_a_listing_that_fails_is_probed_instead_and_says_so(tmp_path):
    with LoopbackServer() as server:
        serve_catalog(server)
        server.route(CATALOG_TREE, lambda *_: Reply(403, b"{}", {"X-RateLimit-Remaining": "0",
                                                                   "X-RateLimit-Reset": "4102444800"}))
        _p, _f, report = fetch(server, tmp_path / "raw")
    assert report.newest == "v8" and report.read and report.how.startswith("probed")
    assert report.warning and any("rate limited" in n and "probed" in n for n in report.notes)


@needs_catalog
def test_probing_is_bounded(tmp_path):
    with LoopbackServer() as server:  # nothing served: every probe is a 404
        with pytest.raises(PriceFetchError, match="no catalog version with a vms.csv"):
            fetch(server, tmp_path / "raw", listing_url=None)
        assert len(server.requests) == MAX_PROBES


@needs_catalog
def test_a_missing_cloud_file_falls_back_a_broken_one_is_quarantined(tmp_path):
    with LoopbackServer() as server:
        serve_catalog(server)
        server.route("/catalogs/v8/lambda/vms.csv", lambda *_: Reply(404, b"gone"))  # listed, then gone: v7
        server.route("/catalogs/v8/nebius/vms.csv", lambda *_: csv_reply(b"<html>not a csv</html>"))
        server.route("/catalogs/v8/cudo/vms.csv", lambda *_: Reply(500, b"down"))  # a failure is not "missing"
        parsed, _files, report = fetch(server, tmp_path / "raw")
        assert report.read["lambda"] == "v7" and report.missing_in["lambda"] == ["v8"]
        lam = parsed.prices.filter(pl.col("provider") == "lambda")
        assert set(lam["catalog_version"]) == {"v7"} and lam["catalog_fallback"].all()
        assert "nebius" not in report.read and "cudo" not in report.read
        assert "/catalogs/v7/cudo/vms.csv" not in [p for _m, p, _h in server.requests]
        lost = parsed.quarantine.filter(pl.col("reason").str.starts_with("catalog file for"))
        assert sorted(lost["file"]) == ["catalogs/v8/cudo/vms.csv", "catalogs/v8/nebius/vms.csv"]
        assert any("500" in r for r in lost["reason"]) and any("missing columns" in r for r in lost["reason"])
        for path in catalog_paths():
            server.route(path, lambda *_: Reply(404, b"gone"))
        with pytest.raises(PriceFetchError, match="none of .* vms.csv files could be read"):
            fetch(server, tmp_path / "raw")
        with pytest.raises(PriceFetchError, match="nowhere: not in the catalog's listing"):
            fetch(server, tmp_path / "other", clouds=("nowhere",))


@needs_catalog
def test_the_catalog_asset_records_what_it_found_and_warns(tmp_path):
    import logging

    import dagster as dg

    from pipelines.defs.prices.assets import catalog_prices
    from pipelines.defs.prices.resources import PriceSources
    from pipelines.defs.resources import WarehouseLocation

    instance = dg.DagsterInstance.ephemeral()
    with LoopbackServer() as server:
        serve_catalog(server)
        sources = PriceSources(catalog_url=server.url, catalog_listing_url=server.url, max_attempts=2,
                               backoff_seconds=0.01)
        result = dg.materialize([catalog_prices], partition_key=DAY2, instance=instance, resources={
            "price_sources": sources, "warehouse_location": WarehouseLocation(directory=str(tmp_path))})
    assert result.success
    meta = {k: getattr(v, "value", v) for k, v in result.asset_materializations_for_node("catalog_prices")[0]
            .metadata.items()}
    assert meta["notes"].startswith("catalog v8 (GitHub tree of skypilot-org/skypilot-catalog@master)")
    assert meta["warning"] is True and meta["catalog"]["read"]["azure"] == "v6"
    warnings = [e.user_message for e in instance.all_logs(result.run_id)
                if e.level == logging.WARNING and "cloud_providers.csv" in (e.user_message or "")]
    assert any("'yotta'" in w for w in warnings)
    # the staged snapshot keeps each row's catalog version
    staged = pl.read_parquet(tmp_path / "staging" / "cloud_prices" / f"catalog-{DAY2}.parquet")
    assert set(staged.filter(pl.col("provider") == "gcp")["catalog_version"]) == {"v7"}
    assert staged.filter(pl.col("provider") == "verda")["catalog_fallback"].not_().all()


# --- one provider per cloud, native cloud, availability ------------------------------------------

def native_clouds(submitters: list[str]) -> set[tuple[str, str]]:
    """(submitter, provider) pairs of the one native-cloud rule, the model int_submitter_cloud."""
    con = duckdb.connect()
    load_seeds(con)
    con.execute("create table stg_training_systems (submitter varchar)")
    con.executemany("insert into stg_training_systems values (?)", [[s] for s in submitters])
    con.execute("create table stg_training_runs as select * from stg_training_systems where false")
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
