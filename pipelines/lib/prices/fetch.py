"""Fetch each provider's price list over HTTP, keep the raw responses, parse, and stage.

Plain functions, no Dagster: the assets in `pipelines/defs/prices/assets.py` call them.
Every fetch function saves the responses exactly as fetched under
`<raw_root>/<provider>/<day>/` and returns `(ParsedPrices, [raw files])`. Nothing is staged
unless the whole fetch and parse succeeded, so a failed fetch keeps the previous snapshot.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import requests

from pipelines.lib.io import github
from pipelines.lib.io.files import atomic_write_bytes
from pipelines.lib.io.http import (
    FetchError,
    RetryableError,
    RetryPolicy,
    check_followed_url,
    fetch_to_file,
    get_json,
    make_session,
    read_bounded,
)
from pipelines.lib.io.limits import limit
from pipelines.lib.io.redaction import redact, register_secret
from pipelines.lib.prices.aws import aws_region_index_urls, parse_aws_offer_path
from pipelines.lib.prices.azure import (
    azure_next_page,
    is_repeating_link,
    parse_azure_retail_pages,
)
from pipelines.lib.prices.catalog import (
    MAX_CLOUDS,
    MAX_PROBES,
    PROBE_AHEAD,
    RECORD_NAME,
    SKIPPED_CLOUDS,
    CatalogListing,
    CatalogReport,
    DiscoveryRecord,
    clouds_named,
    fallback_window,
    is_local,
    listed_repository,
    listing_api,
    listing_from_folder,
    listing_from_tree,
    parse_skypilot_vms_csv,
    probe_path,
    provider_kinds,
    tree_url,
    version_name,
    version_number,
    vms_path,
)
from pipelines.lib.prices.curated import CURATED_CSV, load_curated_prices
from pipelines.lib.prices.gcp import gcp_next_page_token, parse_gcp_skus
from pipelines.lib.prices.normalize import (
    PARSED_QUARANTINE_SCHEMA,
    PRICE_SCHEMA,
    STAGED_PRICE_SCHEMA,
    ParsedPrices,
    concat_parsed,
    payload_text,
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


def _base(url: str) -> str:
    return url.rstrip("/")


def fetch_azure(base_url: str, raw_root: Path, policy: RetryPolicy = RetryPolicy(), *, day: str | None = None,
                max_pages: int = MAX_PAGES, query_filter: str = AZURE_GPU_FILTER) -> tuple[ParsedPrices, list[Path]]:
    """Azure Retail Prices API: follow NextPageLink until null; refuse a repeating link."""
    directory = provider_raw_dir(raw_root, "azure", day or today())
    first = _base(base_url) + AZURE_PATH
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
    index_url = _base(base_url) + AWS_REGION_INDEX_PATH
    _index, body = get_json(index_url, policy=policy)
    files = [_save(directory, "region_index.json", body)]
    try:
        urls = aws_region_index_urls(body, _base(base_url))
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
            url = _base(base_url) + GCP_SKUS_PATH.format(service=service)
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
    url = _base(base_url) + OCI_PATH
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


def fetch_catalog(base_url: str, raw_root: Path, policy: RetryPolicy = RetryPolicy(),
                  clouds: tuple[str, ...] | None = None, *, day: str | None = None, listing_url: str | None = None,
                  token: str | None = None) -> tuple[ParsedPrices, list[Path], CatalogReport]:
    """The SkyPilot catalog: its versions and clouds discovered (`pipelines.lib.prices.catalog`), then
    `{base}/catalogs/{version}/{cloud}/vms.csv` per cloud from the newest version that has it, kept as
    fetched. Returns the parsed rows, the raw files and what was found and read (`CatalogReport`).

    `listing_url`: GitHub's API (or a mirror of it) that lists the catalog's tree, when it is not a folder
    (`catalog.listing_api` chooses it); None: probed. `clouds`: read only these (default: every cloud the
    catalog has, but `SKIPPED_CLOUDS`). A 404 means "no file for that cloud in that version": the next
    older version is tried. Any other failure of one cloud's file (HTTP error, not a vms.csv) becomes a
    quarantine row naming the URL and the cause, and the other clouds are still read; only when no file
    can be read is the fetch an error (so the previous catalog snapshot stays current).
    """
    day = day or today()
    root = Path(raw_root) / "catalog"
    directory = provider_raw_dir(raw_root, "catalog", day)
    base = _base(base_url)
    record = DiscoveryRecord.load(root / RECORD_NAME)
    previous = _previously_read(root, day, record)
    report = CatalogReport(first=previous is None)
    files: list[Path] = []
    parts: list[ParsedPrices] = []
    failures: list[dict[str, str]] = []
    with make_session() as session:
        listing, etag = _catalog_listing(base, listing_url, record, token, policy, session, directory, files, report)
        if listing is not None:
            newest, candidates, probed = listing.newest(), set(listing.files), []
            if listing.refused:
                report.notes.append(f"listed files not read (no valid version or cloud name): {', '.join(listing.refused)}")
        else:
            newest, candidates, probed = _probe_versions(base, record, policy, session, root, files, report)
            candidates |= set(record.read) if record else set()  # clouds read before, named nowhere now
        if newest is None:  # a source that cannot be reached says so, as every other source does
            raise PriceFetchError(f"catalog: {report.unreachable}" if report.unreachable else
                                  f"catalog: no catalog version with a vms.csv found at {base} ({report.how})")
        report.newest = newest
        window = fallback_window(newest)
        if clouds:
            candidates = set(clouds)
        else:
            report.skipped = {c: why for c, why in SKIPPED_CLOUDS.items() if c in candidates}
            candidates -= set(SKIPPED_CLOUDS)
        ordered = sorted(candidates)
        if len(ordered) > MAX_CLOUDS:
            report.notes.append(f"{len(ordered)} clouds found, only the first {MAX_CLOUDS} read "
                                f"(not read: {', '.join(ordered[MAX_CLOUDS:])})")
            ordered = ordered[:MAX_CLOUDS]
        for cloud in ordered:
            listed = listing.files.get(cloud, {}) if listing is not None else None
            versions = window if listed is None else [v for v in window if v in listed]
            if not versions:
                report.not_found[cloud] = (
                    "not in the catalog's listing" if not listed else
                    f"its newest vms.csv is {max(listed, key=version_number)}, more than the "
                    f"{len(window) - 1} versions below {newest} a cloud may fall back to")
                if clouds:
                    failures.append(_catalog_failure(cloud, vms_path(newest, cloud), f"{base}/{vms_path(newest, cloud)}",
                                                     f"no vms.csv for {cloud}: {report.not_found[cloud]}"))
                continue
            part = _read_cloud(base, cloud, versions, newest, policy, session, directory, report, failures)
            if part is not None:
                files.append(directory / f"{cloud}_vms.csv")
                parts.append(part)
            elif cloud not in report.failed:
                report.not_found[cloud] = f"no vms.csv in {', '.join(versions)}"
                if clouds:
                    failures.append(_catalog_failure(cloud, vms_path(newest, cloud), f"{base}/{vms_path(newest, cloud)}",
                                                     f"no vms.csv for {cloud} in {', '.join(versions)} (HTTP 404)"))
    if not parts:
        causes = [f"{c}: {why}" for c, why in {**report.failed, **report.not_found}.items()]
        raise PriceFetchError(f"catalog: none of {len(report.failed) + len(report.not_found)} vms.csv files could "
                              f"be read ({causes[0] if causes else 'no cloud found'}, ...)")
    read = set(report.read)
    if previous is not None:
        report.new = sorted(read - previous)
        report.gone = sorted(previous - read - set(report.failed))
    kinds = provider_kinds()
    report.unknown_kind = sorted(c for c in read if c.lower() not in kinds)
    parsed = concat_parsed(parts, source="prices/catalog")
    if failures:
        lost = pl.DataFrame(failures, schema=PARSED_QUARANTINE_SCHEMA, orient="row")
        parsed = ParsedPrices(parsed.prices, pl.concat([parsed.quarantine, lost]), parsed.skipped_non_accelerator)
    files.append(atomic_write_bytes(directory / "catalog_report.json",
                                    json.dumps(report.to_json(), indent=1, sort_keys=True).encode()))
    # a cloud that failed today keeps its last version in the record: it is not "new" when it comes back
    kept = {c: v for c, v in (record.read if record else {}).items() if c in report.failed}
    DiscoveryRecord(
        newest=newest, read=dict(sorted((kept | report.read).items())), probed_versions=probed,
        listing_url=etag[0] if etag else None, listing_etag=etag[1] if etag else None,
        listing=listing.to_json() if (etag and listing is not None) else None,
    ).save(root / RECORD_NAME)
    return parsed, files, report


def _catalog_failure(cloud: str, file: str, url: str, reason: str) -> dict[str, str]:
    return {"source": "prices/catalog", "file": file, "record": url, "reason": reason,
            "payload": payload_text({"cloud": cloud, "url": url})}


def _previously_read(root: Path, day: str, record: DiscoveryRecord | None) -> set[str] | None:
    """The clouds the previous catalog fetch read: the record's, else (a warehouse from before the record)
    the vms.csv files of the newest earlier day's raw folder; None when there was no earlier fetch."""
    if record is not None:
        return set(record.read)
    earlier = sorted(p for p in root.glob("????-??-??") if p.is_dir() and p.name < day)
    for folder in reversed(earlier):
        kept = {p.name.removesuffix("_vms.csv") for p in folder.glob("*_vms.csv")}
        if kept:
            return kept
    return None


def _missing(error: FetchError) -> bool:
    """Whether a failed fetch means the file is not there (HTTP 404/410, or no such local file), which is
    the one failure that lets a cloud fall back to an older catalog version."""
    text = str(error)
    return bool(re.search(r": HTTP (404|410)\b", text)) or "FileNotFoundError" in text


def _catalog_listing(base: str, listing_url: str | None, record: DiscoveryRecord | None, token: str | None,
                     policy: RetryPolicy, session, directory: Path, files: list[Path],
                     report: CatalogReport) -> tuple[CatalogListing | None, tuple[str, str] | None]:
    """The catalog's listing (a local folder, or GitHub's tree of the repository, conditional on the last
    one's ETag), and (tree URL, ETag) to record; (None, None) when there is none: the caller probes."""
    if is_local(base):
        local = _local_root(base)
        try:
            listing = listing_from_folder(local)
        except (OSError, ValueError) as error:
            report.how = f"probed: {local} could not be listed ({error})"
            report.notes.append(f"the catalog folder {local} could not be listed: probed instead")
            return None, None
        report.how = "folder listing"
        return listing, None
    api = listing_api(base, listing_url, None)
    if api is None:
        report.how = "probed: no listing for this base URL"
        return None, None
    repository = listed_repository(base)
    url = tree_url(api, repository)
    cached = record.listing if record and record.listing_url == url and record.listing_etag else None
    try:
        resp = session.get(url, headers=github.headers(record.listing_etag if cached else None, token),
                           timeout=policy.timeout, stream=True)
    except requests.RequestException as error:
        return _listing_failed(report, url, f"{type(error).__name__}: {str(error)[:120]}")
    with resp:
        if resp.status_code == 304 and cached:
            report.how = f"GitHub tree of {repository}, unchanged (304)"
            try:
                return CatalogListing.from_json(cached, report.how), (url, record.listing_etag)
            except (KeyError, TypeError, AttributeError, ValueError) as error:
                return _listing_failed(report, url, f"304, but the recorded listing is unreadable ({error!r})")
        if (until := github.rate_limited_until(resp)) is not None:
            return _listing_failed(report, url, f"rate limited until {datetime.fromtimestamp(until, UTC):%H:%M}Z")
        if resp.status_code != 200:
            return _listing_failed(report, url, f"HTTP {resp.status_code}")
        try:
            body = read_bounded(resp, url, policy)
            listing = listing_from_tree(body, f"GitHub tree of {repository}")
        except (FetchError, RetryableError, requests.RequestException, ValueError) as error:
            return _listing_failed(report, url, str(error)[:200])
    files.append(atomic_write_bytes(directory / "listing.json", body))
    report.how = f"GitHub tree of {repository}"
    etag = resp.headers.get("ETag")
    return listing, ((url, etag) if etag else None)


def _listing_failed(report: CatalogReport, url: str, why: str) -> tuple[None, None]:
    report.how = "probed: the listing could not be read"
    report.notes.append(f"the catalog listing {url} could not be read ({why}): versions probed, clouds from "
                        "common/accelerators.csv and earlier refreshes (a new cloud named nowhere is not seen)")
    return None, None


def _local_root(base: str) -> Path:
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    parts = urlsplit(base)
    return Path(url2pathname(parts.path)) if parts.scheme == "file" else Path(base)


def _probe_versions(base: str, record: DiscoveryRecord | None, policy: RetryPolicy, session, root: Path,
                    files: list[Path], report: CatalogReport) -> tuple[str | None, set[str], list[str]]:
    """Without a listing: `catalogs/v<N>/common/accelerators.csv` probed upward from the newest version
    recorded (else v1) until `PROBE_AHEAD` versions in a row are missing after one answered, and below the
    recorded one only when nothing at or above it answers; at most `MAX_PROBES` requests, each conditional
    on the copy kept from the last probe. Returns the newest version that answered, the clouds those
    files name, and the versions that answered."""
    start = version_number(record.newest) if record and record.newest else 1
    found: list[str] = []
    named: set[str] = set()
    probes = 0

    def probe(number: int) -> bool | None:
        """True: the version answered; False: it is not there (404); None: the probe failed."""
        nonlocal probes, named
        probes += 1
        version = version_name(number)
        url = f"{base}/{probe_path(version)}"
        try:
            result = fetch_to_file(url, root / "probes" / f"{version}_accelerators.csv", policy=policy,
                                   session=session)
        except FetchError as error:
            if _missing(error):
                return False
            report.notes.append(f"probing {version} failed ({str(error)[:120]}): no version above it probed")
            report.unreachable = report.unreachable or str(error)
            return None
        found.append(version)
        files.append(result.path)
        named |= clouds_named(result.path.read_bytes())
        return True

    number, misses = start, 0
    while probes < MAX_PROBES:
        answer = probe(number)
        if answer is None:
            break
        misses = 0 if answer else misses + 1
        if misses >= PROBE_AHEAD and (found or start > 1):
            break
        number += 1
    for number in range(start - 1, 0, -1) if not found else ():
        if probes >= MAX_PROBES or probe(number) is not False:
            break
    newest = max(found, key=version_number) if found else None
    report.how = f"probed: no listing; {', '.join(found) or 'no version'} answered"
    return newest, named, sorted(found, key=version_number)


def _read_cloud(base: str, cloud: str, versions: list[str], newest: str, policy: RetryPolicy, session,
                directory: Path, report: CatalogReport, failures: list[dict[str, str]]) -> ParsedPrices | None:
    """A cloud's vms.csv from the first of `versions` that has it (404: the next one), parsed; None when
    none has it or it failed (then `report.failed` and a quarantine row say why)."""
    for version in versions:
        path = vms_path(version, cloud)
        url = f"{base}/{path}"
        try:
            result = fetch_to_file(url, directory / f"{cloud}_vms.csv", policy=policy, session=session,
                                   conditional=False)
            parsed = parse_skypilot_vms_csv(result.path.read_bytes(), cloud, file=path, source_url=url,
                                            version=version, newest=newest)
        except FetchError as error:
            if _missing(error):
                report.missing_in.setdefault(cloud, []).append(version)
                continue
            return _cloud_failed(cloud, path, url, error, report, failures)
        except ValueError as error:
            return _cloud_failed(cloud, path, url, error, report, failures)
        report.read[cloud] = version
        return parsed
    return None


def _cloud_failed(cloud: str, path: str, url: str, error: Exception, report: CatalogReport,
                  failures: list[dict[str, str]]) -> None:
    report.failed[cloud] = str(error).replace(url + ": ", "")[:200]
    failures.append(_catalog_failure(cloud, path, url, f"catalog file for {cloud} not read: {error}"))
    return None


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


