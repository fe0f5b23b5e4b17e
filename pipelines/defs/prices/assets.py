"""One asset per price source, partitioned by fetch day. Each fetches, keeps the raw responses
under warehouse/raw/prices/<provider>/<day>/, parses, and stages
warehouse/staging/cloud_prices/<provider>-<day>.parquet (plus its quarantine rows).
A failure stages nothing, so the previous snapshot stays the current one."""


import time
from datetime import UTC, datetime

import dagster as dg

from pipelines.defs.metadata import PricesStaged
from pipelines.defs.prices.resources import PriceSources
from pipelines.defs.resources import WarehouseLocation

price_days = dg.DailyPartitionsDefinition(start_date="2026-01-01", end_offset=1)  # today's partition exists

_COMMON = dict(partitions_def=price_days, group_name="prices")


def _run(context: dg.AssetExecutionContext, provider: str, location: WarehouseLocation, fetch, source_url: str,
         ) -> dg.MaterializeResult:
    from pipelines.lib.io.paths import raw_dir
    from pipelines.lib.prices.fetch import PriceFetchError, stage_prices

    base = location.path()
    day = context.partition_key
    fetched_at = datetime.now(UTC)
    started = time.perf_counter()
    try:
        # (parsed, files), or (parsed, files, report) for a source that reports what it found (the catalog)
        parsed, files, *report = fetch(raw_dir("prices", base), day)
    except PriceFetchError:
        raise
    except Exception as error:  # FetchError, ValueError from a parser: name the provider
        raise PriceFetchError(f"{provider}: {error}") from error
    paths = stage_prices(provider, parsed, base, day, fetched_at)
    context.log.info(f"{provider} {day}: {paths['rows']} prices, {paths['quarantined']} quarantined, "
                     f"{parsed.skipped_non_accelerator} non-accelerator records skipped, {len(files)} raw file(s)")
    extra = {}
    if report:
        context.log.info(report[0].summary())
        for line in report[0].warnings():
            context.log.warning(line)
        # `notes` and `warning` for the refresh's line, the whole report for the UI
        extra = {"notes": report[0].summary(), "warning": report[0].warning,
                 "catalog": dg.MetadataValue.json(report[0].to_json())}
    return dg.MaterializeResult(metadata=PricesStaged(
        rows=paths["rows"], quarantined=paths["quarantined"], pages=len(files),
        seconds=round(time.perf_counter() - started, 2), skipped_non_accelerator=parsed.skipped_non_accelerator,
        source_url=source_url, staged=str(paths["prices"]), fetched_at=fetched_at.isoformat(timespec="seconds"),
    ).as_metadata() | extra)


@dg.asset(**_COMMON, kinds={"azure", "parquet"},
          description="Azure Retail Prices API (no auth): GPU VM SKUs via an OData $filter, following "
          "NextPageLink until null; Windows/Low Priority rows quarantined.")
def azure_prices(context: dg.AssetExecutionContext, price_sources: PriceSources,
                 warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.prices.fetch import AZURE_PATH, fetch_azure

    return _run(context, "azure", warehouse_location,
                lambda raw, day: fetch_azure(price_sources.azure_url, raw, price_sources.policy(), day=day),
                price_sources.azure_url.rstrip("/") + AZURE_PATH)


@dg.asset(**_COMMON, kinds={"aws", "parquet"},
          description="AWS Price List Bulk API (no auth): region index, then each region's EC2 offer file "
          "(JSON) streamed to disk and parsed incrementally in bounded memory.")
def aws_prices(context: dg.AssetExecutionContext, price_sources: PriceSources,
               warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.prices.fetch import AWS_REGION_INDEX_PATH, fetch_aws

    return _run(context, "aws", warehouse_location,
                lambda raw, day: fetch_aws(price_sources.aws_url, raw, price_sources.policy(),
                                           tuple(price_sources.aws_regions), day=day,
                                           max_offer_bytes=price_sources.max_aws_offer_bytes),
                price_sources.aws_url.rstrip("/") + AWS_REGION_INDEX_PATH)


@dg.asset(**_COMMON, kinds={"gcp", "parquet"},
          description="Google Cloud Billing Catalog API services/{id}/skus (Compute Engine and Cloud TPU), "
          "pageToken paging. Needs MLPERF_GCP_API_KEY; without it the asset is skipped, not failed.")
def gcp_prices(context: dg.AssetExecutionContext, price_sources: PriceSources,
               warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.prices.fetch import GCP_SKUS_PATH, fetch_gcp

    if not price_sources.gcp_api_key:
        context.log.warning("gcp_prices skipped: no MLPERF_GCP_API_KEY set (the Cloud Billing Catalog API "
                            "needs an API key); the previous GCP snapshot, if any, stays current")
        return dg.MaterializeResult(metadata=PricesStaged(rows=0, skipped="no MLPERF_GCP_API_KEY").as_metadata())
    return _run(context, "gcp", warehouse_location,
                lambda raw, day: fetch_gcp(price_sources.gcp_url, price_sources.gcp_api_key, raw,
                                           price_sources.policy(), day=day),
                price_sources.gcp_url.rstrip("/") + GCP_SKUS_PATH)


@dg.asset(**_COMMON, kinds={"oracle", "parquet"},
          description="Oracle Cloud price list API (no auth; GPU prices per GPU-hour); software licence "
          "rows quarantined.")
def oci_prices(context: dg.AssetExecutionContext, price_sources: PriceSources,
               warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.prices.fetch import OCI_PATH, fetch_oci

    return _run(context, "oci", warehouse_location,
                lambda raw, day: fetch_oci(price_sources.oci_url, raw, price_sources.policy(), day=day),
                price_sources.oci_url.rstrip("/") + OCI_PATH + "?currencyCode=USD")


@dg.asset(**_COMMON, kinds={"csv", "parquet"},
          description="The curated list-price file in the repository (pipelines/lib/prices/"
          "curated_list_prices.csv): published prices no API serves, each row with its source URL and date.")
def curated_prices(context: dg.AssetExecutionContext, warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.prices.curated import CURATED_CSV
    from pipelines.lib.prices.fetch import fetch_curated

    return _run(context, "curated", warehouse_location, lambda raw, day: fetch_curated(raw, day=day),
                str(CURATED_CSV.name))


@dg.asset(**_COMMON, kinds={"csv", "parquet"},
          description="The public SkyPilot catalog (skypilot-org/skypilot-catalog): catalogs/<version>/<cloud>/vms.csv "
          "of every cloud the catalog lists (GCP, Azure, OCI and the neoclouds and marketplaces), each from the newest "
          "version that has its file (at most two versions older, said in each row and in the refresh), parsed by "
          "header name. Versions and clouds are discovered (the repository's tree on GitHub, a mirror folder's "
          "listing, else probed), never listed in code. Rows are price_source 'catalog' of their cloud and never "
          "replace a provider's own API row; placeholders, swapped columns, GPU-only and unmapped rows are "
          "quarantined. Base URL: MLPERF_PRICE_CATALOG_URL.")
def catalog_prices(context: dg.AssetExecutionContext, price_sources: PriceSources,
                   warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.prices.catalog_fetch import fetch_catalog

    listing = price_sources.catalog_listing()
    return _run(context, "catalog", warehouse_location,
                lambda raw, day: fetch_catalog(price_sources.catalog_url, raw, price_sources.policy(),
                                               tuple(price_sources.catalog_clouds) or None, day=day,
                                               listing_url=listing,
                                               token=price_sources.github_token() if listing else None),
                price_sources.catalog_url.rstrip("/") + "/catalogs/")


PRICE_ASSETS = [azure_prices, aws_prices, gcp_prices, oci_prices, curated_prices, catalog_prices]
