"""Fetch the SkyPilot catalog: discover its versions and clouds, then read each cloud's vms.csv, kept as fetched.

`fetch_catalog` lists the catalog (a local folder, or GitHub's tree of the repository, conditional on the last
listing's ETag), else probes its versions; reads each cloud's vms.csv from the newest version that has it
(`catalog_vms.py` parses it); and records what it found for the next refresh (`DiscoveryRecord`). The catalog's
layout and listing: `catalog.py`; the other providers' fetches: `fetch.py`.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import requests

from pipelines.lib.io import github
from pipelines.lib.io.bounded import read_bounded
from pipelines.lib.io.files import atomic_write_bytes
from pipelines.lib.io.http import fetch_to_file
from pipelines.lib.io.retry import FetchError, RetryableError, RetryPolicy, make_session
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
    probe_path,
    provider_kinds,
    tree_url,
    version_name,
    version_number,
    vms_path,
)
from pipelines.lib.prices.catalog_vms import parse_skypilot_vms_csv
from pipelines.lib.prices.fetch import PriceFetchError, provider_raw_dir, strip_trailing_slash, today
from pipelines.lib.prices.normalize import (
    PARSED_QUARANTINE_SCHEMA,
    ParsedPrices,
    concat_parsed,
    payload_text,
)


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
    base = strip_trailing_slash(base_url)
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
