"""Discover MLPerf Training, HPC and Inference rounds from the `mlcommons` GitHub organization's repositories.

Plain functions (no Dagster) for the discovery sensor. One call lists the org's repositories,
following `Link: rel="next"`. It is ETag-aware (a 304 on the first page means nothing changed; it
is free against the rate limit) and rate-limit aware: when GitHub says the budget is spent, it
returns when to try again instead of raising, so an hourly sensor never fails for that.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import requests

from pipelines.lib.io.http import (
    FetchError,
    RetryableError,
    check_followed_url,
    make_session,
    read_bounded,
)
from pipelines.lib.io.jsonsafe import loads_bounded
from pipelines.lib.mlperf.suites import SUITES
from pipelines.lib.reference.sources import DEFAULT_GITHUB_API_URL

ORG = "mlcommons"
# `training_results_v5.1`, `hpc_results_v3.0`: each suite's results repository (lib/mlperf/suites.py)
REPO_PATTERN = re.compile(rf"^({'|'.join(re.escape(s.repository) for s in SUITES.values())})_(v\d+\.\d+)$")
_SUITE_OF_REPOSITORY = {s.repository: s.name for s in SUITES.values()}
MAX_PAGES = 20  # a guard against a Link loop; the org has a few hundred repositories


@dataclass(frozen=True)
class Discovery:
    # every round found (not only new ones), oldest first, by suite name (suites.SUITES)
    rounds_by_suite: dict[str, list[str]] = field(default_factory=dict)
    etag: str | None = None
    not_modified: bool = False
    skip_until: float | None = None  # epoch seconds; set when rate-limited
    message: str = ""


def _headers(etag: str | None, token: str | None) -> dict[str, str]:
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if etag:
        headers["If-None-Match"] = etag
    return headers


def _rate_limited_until(resp: requests.Response) -> float | None:
    """When GitHub's rate limit (primary or secondary) lifts, or None if this is not a rate limit."""
    if resp.status_code not in (403, 429):
        return None
    if resp.headers.get("X-RateLimit-Remaining") == "0":
        reset = resp.headers.get("X-RateLimit-Reset", "")
        return float(reset) if reset.isdigit() else time.time() + 3600
    if (retry_after := resp.headers.get("Retry-After", "")).isdigit():  # secondary limits
        return time.time() + int(retry_after)
    return time.time() + 60 if resp.status_code == 429 else None


def discover_rounds(etag: str | None = None, *, api_url: str = DEFAULT_GITHUB_API_URL, token: str | None = None,
                    session: requests.Session | None = None,
                    timeout: tuple[float, float] = (10.0, 30.0)) -> Discovery:
    """Every suite's rounds (`training_results_vX.Y`, `hpc_results_vX.Y`, ...), or not_modified / skip_until.
    Raises FetchError otherwise.
    `api_url`: GitHub's REST API (or a mirror); `token`: optional, for a higher rate limit."""
    http = session or make_session()
    api_url = api_url.rstrip("/")
    # Newest-created first, so a new round lands on page 1 and changes the page-1 ETag.
    url = f"{api_url}/orgs/{ORG}/repos?per_page=100&page=1&sort=created&direction=desc"
    found: dict[str, set[str]] = {name: set() for name in SUITES}
    first_etag = None
    try:
        for page in range(1, MAX_PAGES + 1):
            try:
                resp = http.get(url, headers=_headers(etag if page == 1 else None, token), timeout=timeout, stream=True)
            except requests.RequestException as exc:
                raise FetchError(f"{url}: {exc.__class__.__name__}: {exc}") from exc
            if page == 1 and resp.status_code == 304:
                return Discovery(etag=etag, not_modified=True, message="repository list unchanged (304)")
            if (until := _rate_limited_until(resp)) is not None:
                return Discovery(etag=etag, skip_until=until, message=f"GitHub rate limit: HTTP {resp.status_code}, "
                                 f"skipping until {time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime(until))}")
            if resp.status_code != 200:
                raise FetchError(f"{url}: HTTP {resp.status_code} {resp.reason}")
            if page == 1:
                first_etag = resp.headers.get("ETag")
            try:
                repos = loads_bounded(read_bounded(resp, url))
            except (ValueError, RetryableError, requests.RequestException) as exc:
                raise FetchError(f"{url}: unreadable or invalid JSON: {exc}") from exc
            finally:
                resp.close()
            if not isinstance(repos, list):
                raise FetchError(f"{url}: expected a JSON list of repositories")
            for repo in repos:
                if isinstance(repo, dict) and (m := REPO_PATTERN.match(str(repo.get("name", "")))):
                    found[_SUITE_OF_REPOSITORY[m.group(1)]].add(m.group(2))
            url = resp.links.get("next", {}).get("url")
            if not url:
                break
            url = check_followed_url(url, api_url, "GitHub Link rel=next")
    finally:
        if session is None:
            http.close()
    from pipelines.lib.mlperf.rounds import round_sort_key

    return Discovery(rounds_by_suite={name: sorted(rounds, key=round_sort_key) for name, rounds in found.items()},
                     etag=first_etag,
                     message=", ".join(f"{len(found[name])} {suite.label}" for name, suite in SUITES.items())
                     + " rounds listed")
