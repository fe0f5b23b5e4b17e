"""Fetch each provider's price list over HTTP, keep the raw responses, parse, and stage.

Plain functions, no Dagster: the assets in `pipelines/defs/prices/assets.py` call them.
Every fetch function saves the responses exactly as fetched under
`<raw_root>/<provider>/<day>/` and returns `(ParsedPrices, [raw files])`. Nothing is staged
unless the whole fetch and parse succeeded, so a failed fetch keeps the previous snapshot.
The SkyPilot catalog, which is discovered before it is read, is fetched by `catalog_fetch.py`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from pipelines.lib.io.files import atomic_write_bytes
from pipelines.lib.io.http import fetch_to_file, get_json
from pipelines.lib.io.limits import limit
from pipelines.lib.io.redaction import redact, register_secret
from pipelines.lib.io.retry import RetryPolicy, make_session
from pipelines.lib.io.urls import check_followed_url
from pipelines.lib.prices.aws import aws_region_index_urls, parse_aws_offer_path
from pipelines.lib.prices.azure import (
    azure_next_page,
    is_repeating_link,
    parse_azure_retail_pages,
)
from pipelines.lib.prices.curated import CURATED_CSV, load_curated_prices
from pipelines.lib.prices.gcp import gcp_next_page_token, parse_gcp_skus
from pipelines.lib.prices.normalize import (
    PRICE_SCHEMA,
    STAGED_PRICE_SCHEMA,
    ParsedPrices,
    concat_parsed,
)
from pipelines.lib.prices.oci import parse_oci_products
from pipelines.lib.staging.files import write_staged
from pipelines.lib.staging.validation import QUARANTINE_SCHEMA, validate_or_quarantine
from schemas.prices import CloudPriceRow

AZURE_PATH = "/api/retail/prices"
# GPU VM SKUs: the N-series families that carry accelerators (ND: training, NC: compute GPUs).
AZURE_GPU_FILTER = (
    "serviceName eq 'Virtual Machines' and (contains(armSkuName,'ND') or contains(armSkuName,'NC'))"
)
AWS_REGION_INDEX_PATH = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
GCP_SKUS_PATH = "/v1/services/{service}/skus"
GCP_SERVICES = {"compute": "6F81-5844-456A", "tpu": "E000-3F24-B8AA"}
OCI_PATH = "/pls/apex/cetools/api/v1/products/"
MAX_PAGES = 1000


class PriceFetchError(Exception):
    """A price list could not be fetched or parsed; the message names the provider and cause."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


def today() -> str:
    return date.today().isoformat()


def provider_raw_dir(raw_root: Path, provider: str, day: str) -> Path:
    path = Path(raw_root) / provider / day
    path.mkdir(parents=True, exist_ok=True)
    return path


def _save(directory: Path, name: str, body: bytes) -> Path:
    """Keep a raw response as fetched (atomically)."""
    return atomic_write_bytes(directory / name, body)


def strip_trailing_slash(url: str) -> str:
    """A base URL without its trailing slash (the API paths are appended to it)."""
    return url.rstrip("/")


def fetch_azure(base_url: str, raw_root: Path, policy: RetryPolicy = RetryPolicy(), *, day: str | None = None,
                max_pages: int = MAX_PAGES, query_filter: str = AZURE_GPU_FILTER) -> tuple[ParsedPrices, list[Path]]:
    """Azure Retail Prices API: follow NextPageLink until null; refuse a repeating link."""
    directory = provider_raw_dir(raw_root, "azure", day or today())
    first = strip_trailing_slash(base_url) + AZURE_PATH
    source_url = f"{first}?$filter={query_filter}"
    seen: set[str] = set()
    is_repeating_link(source_url, seen)
    pages: list[tuple[str, bytes]] = []
    files: list[Path] = []
    url, params = first, {"$filter": query_filter}
    with make_session() as session:
        while True:
            if len(pages) >= max_pages:
                raise PriceFetchError(f"azure: page chain never ends (more than {max_pages} pages; last link {url})")
            page, body = get_json(url, params=params, policy=policy, session=session)
            name = f"page_{len(pages) + 1:03d}.json"
            files.append(_save(directory, name, body))
            pages.append((name, body))
            link = azure_next_page(page if isinstance(page, dict) else {})
            if link is None:
                break
            link = check_followed_url(link, first, "azure NextPageLink")
            if is_repeating_link(link, seen):
                raise PriceFetchError(f"azure: NextPageLink repeats an earlier page ({link}); page chain never ends")
            url, params = link, None
    return parse_azure_retail_pages(pages, source_url=source_url), files


def fetch_aws(base_url: str, raw_root: Path, policy: RetryPolicy = RetryPolicy(), regions=("us-east-1",), *,
              day: str | None = None, max_offer_bytes: int | None = None) -> tuple[ParsedPrices, list[Path]]:
    """AWS Price List Bulk API: region index, then each region's offer file streamed to disk and parsed
    incrementally (the real file is several GB)."""
    directory = provider_raw_dir(raw_root, "aws", day or today())
    index_url = strip_trailing_slash(base_url) + AWS_REGION_INDEX_PATH
    _index, body = get_json(index_url, policy=policy)
    files = [_save(directory, "region_index.json", body)]
    try:
        urls = aws_region_index_urls(body, strip_trailing_slash(base_url))
    except ValueError as error:
        raise PriceFetchError(f"aws: {error}") from error
    missing = [r for r in regions if r not in urls]
    if missing:
        raise PriceFetchError(f"aws: region(s) {missing} not in {index_url}")
    parts = []
    for region in regions:
        offer_url = check_followed_url(urls[region], index_url, f"aws currentVersionUrl of {region}")
        offer_policy = replace(policy, max_bytes=max_offer_bytes or limit("max_aws_offer_bytes"))
        result = fetch_to_file(offer_url, directory / f"offer_{region}.json", policy=offer_policy, conditional=False)
        files.append(result.path)
        try:
            parts.append(parse_aws_offer_path(result.path, source_url=urls[region]))
        except ValueError as error:
            raise PriceFetchError(f"aws: {urls[region]}: {error}") from error
    return concat_parsed(parts, source="prices/aws"), files


def fetch_gcp(base_url: str, api_key: str, raw_root: Path, policy: RetryPolicy = RetryPolicy(),
              services: dict[str, str] | None = None, *, day: str | None = None,
              max_pages: int = MAX_PAGES) -> tuple[ParsedPrices, list[Path]]:
    """Google Cloud Billing Catalog API: `services/{id}/skus` with pageToken paging, per service."""
    if not api_key:
        raise PriceFetchError("gcp: no API key (set MLPERF_GCP_API_KEY)")
    register_secret(api_key)  # redacted from every message from here on
    # why a header: a key in the query string ends up in URLs, and URLs end up in error messages.
    key_header = {"X-Goog-Api-Key": api_key}
    directory = provider_raw_dir(raw_root, "gcp", day or today())
    parts: list[ParsedPrices] = []
    files: list[Path] = []
    with make_session() as session:
        for label, service in (services or GCP_SERVICES).items():
            url = strip_trailing_slash(base_url) + GCP_SKUS_PATH.format(service=service)
            token, tokens_seen, n = None, set(), 0
            while True:
                n += 1
                if n > max_pages:
                    raise PriceFetchError(f"gcp: page chain never ends for service {service} (more than {max_pages} pages)")
                params = {"currencyCode": "USD"} | ({"pageToken": token} if token else {})
                page, body = get_json(url, params=params, headers=key_header, policy=policy, session=session)
                name = f"{label}_page_{n:03d}.json"
                files.append(_save(directory, name, body))
                try:
                    parts.append(parse_gcp_skus(body, file=name, source_url=url))
                except ValueError as error:
                    raise PriceFetchError(f"gcp: {url}: {error}") from error
                token = gcp_next_page_token(page if isinstance(page, dict) else {})
                if token is None:
                    break
                if token in tokens_seen:
                    raise PriceFetchError(f"gcp: pageToken {token!r} repeats for service {service}; page chain never ends")
                tokens_seen.add(token)
    return concat_parsed(parts, source="prices/gcp"), files


def fetch_oci(base_url: str, raw_root: Path, policy: RetryPolicy = RetryPolicy(), *,
              day: str | None = None) -> tuple[ParsedPrices, list[Path]]:
    """Oracle Cloud price list API (one response; GPU prices are per GPU-hour)."""
    directory = provider_raw_dir(raw_root, "oci", day or today())
    url = strip_trailing_slash(base_url) + OCI_PATH
    _page, body = get_json(url, params={"currencyCode": "USD"}, policy=policy)
    files = [_save(directory, "page_001.json", body)]
    try:
        return parse_oci_products(body, file="page_001.json", source_url=f"{url}?currencyCode=USD"), files
    except ValueError as error:
        raise PriceFetchError(f"oci: {url}: {error}") from error


def fetch_curated(raw_root: Path, *, day: str | None = None, path: Path = CURATED_CSV) -> tuple[ParsedPrices, list[Path]]:
    """The curated list-price CSV in the repository (prices no API serves), copied as the raw file."""
    directory = provider_raw_dir(raw_root, "curated", day or today())
    files = [_save(directory, Path(path).name, Path(path).read_bytes())]
    return load_curated_prices(path), files


def stage_prices(provider: str, parsed: ParsedPrices, base: Path | None, day: str,
                 fetched_at: datetime | None = None) -> dict:
    """Validate the normalized rows (`CloudPriceRow`; failures join the quarantine), then write
    `cloud_prices/<provider>-<day>` and `quarantine/prices-<provider>-<day>` (each atomic).

    The quarantine file is written first, so a price snapshot never appears without its
    quarantine rows.
    """
    fetched_at = fetched_at or datetime.now(UTC)
    snapshot = f"{provider}-{day}"
    quarantine = parsed.quarantine.with_columns(pl.lit(snapshot).alias("partition")).select(
        [pl.col(c).cast(t) for c, t in QUARANTINE_SCHEMA.items()]
    )
    prices = parsed.prices.select([pl.col(c).cast(t) for c, t in PRICE_SCHEMA.items()]).with_columns(
        pl.lit(fetched_at).cast(STAGED_PRICE_SCHEMA["fetched_at"]).alias("fetched_at"),
        pl.lit(snapshot).alias("snapshot"),
    )
    prices, invalid = validate_or_quarantine(
        prices, CloudPriceRow, source=f"prices/{provider}", partition=snapshot, file_column="source_url"
    )
    quarantine = pl.concat([quarantine, invalid])
    q_path = write_staged("quarantine", f"prices-{snapshot}", quarantine, base)
    p_path = write_staged("cloud_prices", snapshot, prices, base)
    return {"prices": p_path, "quarantine": q_path, "rows": prices.height, "quarantined": quarantine.height}
