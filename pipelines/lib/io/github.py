"""GitHub's REST API, read the way its documentation asks: every page of a listing (`Link: rel="next"`),
conditional on the first page's ETag (a 304 is free against the rate limit), and polite when the rate
limit is spent (the caller learns until when, instead of an exception). Used to discover rounds (the
`mlcommons` organization's repositories) and rules releases (the tags of `mlcommons/logging`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import requests

from pipelines.lib.io.bounded import read_bounded
from pipelines.lib.io.jsonsafe import loads_bounded
from pipelines.lib.io.retry import FetchError, RetryableError, make_session
from pipelines.lib.io.urls import check_followed_url

MAX_PAGES = 20  # a guard against a Link loop; the listings read here span a page or a few


@dataclass(frozen=True)
class Listing:
    """Every item of a listing (empty when not modified or rate-limited), and what GitHub said."""

    items: list = field(default_factory=list)
    etag: str | None = None  # the first page's ETag: send it back next time
    not_modified: bool = False  # a 304 to that ETag: nothing changed, `items` is empty
    skip_until: float | None = None  # epoch seconds: rate-limited until then
    message: str = ""


def headers(etag: str | None, token: str | None) -> dict[str, str]:
    sent = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    if etag:
        sent["If-None-Match"] = etag
    return sent


def rate_limited_until(resp: requests.Response) -> float | None:
    """When GitHub's rate limit (primary or secondary) lifts, or None if this is not a rate limit."""
    if resp.status_code not in (403, 429):
        return None
    if resp.headers.get("X-RateLimit-Remaining") == "0":
        reset = resp.headers.get("X-RateLimit-Reset", "")
        return float(reset) if reset.isdigit() else time.time() + 3600
    if (retry_after := resp.headers.get("Retry-After", "")).isdigit():  # secondary limits
        return time.time() + int(retry_after)
    return time.time() + 60 if resp.status_code == 429 else None


def _skip_message(status: int, until: float) -> str:
    return f"GitHub rate limit: HTTP {status}, skipping until {time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime(until))}"


def list_pages(url: str, api_url: str, *, etag: str | None = None, token: str | None = None,
               session: requests.Session | None = None, timeout: tuple[float, float] = (10.0, 30.0)) -> Listing:
    """Every item of the JSON list at `url` and the pages its `Link: rel="next"` headers chain (links are
    followed only on `api_url`'s host or an allowed host). Raises FetchError when GitHub cannot be read."""
    http = session or make_session()
    items: list = []
    first_etag = None
    try:
        for page in range(1, MAX_PAGES + 1):
            try:
                resp = http.get(url, headers=headers(etag if page == 1 else None, token), timeout=timeout, stream=True)
            except requests.RequestException as exc:
                raise FetchError(f"{url}: {exc.__class__.__name__}: {exc}") from exc
            try:
                if page == 1 and resp.status_code == 304:
                    return Listing(etag=etag, not_modified=True, message="unchanged (304)")
                if (until := rate_limited_until(resp)) is not None:
                    return Listing(etag=etag, skip_until=until, message=_skip_message(resp.status_code, until))
                if resp.status_code != 200:
                    raise FetchError(f"{url}: HTTP {resp.status_code} {resp.reason}")
                if page == 1:
                    first_etag = resp.headers.get("ETag")
                try:
                    found = loads_bounded(read_bounded(resp, url))
                except (ValueError, RetryableError, requests.RequestException) as exc:
                    raise FetchError(f"{url}: unreadable or invalid JSON: {exc}") from exc
                if not isinstance(found, list):
                    raise FetchError(f"{url}: expected a JSON list")
                items += found
                following = resp.links.get("next", {}).get("url")
            finally:
                resp.close()
            if not following:
                break
            url = check_followed_url(following, api_url, "GitHub Link rel=next")
    finally:
        if session is None:
            http.close()
    return Listing(items, etag=first_etag, message=f"{len(items)} listed")
