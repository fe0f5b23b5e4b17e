"""Discover MLPerf Training, HPC and Inference rounds from the `mlcommons` GitHub organization's repositories.

Plain functions (no Dagster) for the discovery sensor. One call lists the org's repositories,
following `Link: rel="next"`. It is ETag-aware (a 304 on the first page means nothing changed; it
is free against the rate limit) and rate-limit aware: when GitHub says the budget is spent, it
returns when to try again instead of raising, so an hourly sensor never fails for that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import requests

from pipelines.lib.io.github import list_pages
from pipelines.lib.mlperf.suites import SUITES
from pipelines.lib.reference.sources import DEFAULT_GITHUB_API_URL

ORG = "mlcommons"
# `training_results_v5.1`, `hpc_results_v3.0`: each suite's results repository (lib/mlperf/suites.py)
REPO_PATTERN = re.compile(rf"^({'|'.join(re.escape(s.repository) for s in SUITES.values())})_(v\d+\.\d+)$")
_SUITE_OF_REPOSITORY = {s.repository: s.name for s in SUITES.values()}


@dataclass(frozen=True)
class Discovery:
    # every round found (not only new ones), oldest first, by suite name (suites.SUITES)
    rounds_by_suite: dict[str, list[str]] = field(default_factory=dict)
    etag: str | None = None
    not_modified: bool = False
    skip_until: float | None = None  # epoch seconds; set when rate-limited
    message: str = ""


def discover_rounds(etag: str | None = None, *, api_url: str = DEFAULT_GITHUB_API_URL, token: str | None = None,
                    session: requests.Session | None = None,
                    timeout: tuple[float, float] = (10.0, 30.0)) -> Discovery:
    """Every suite's rounds (`training_results_vX.Y`, `hpc_results_vX.Y`, ...), or not_modified / skip_until.
    Raises FetchError otherwise.
    `api_url`: GitHub's REST API (or a mirror); `token`: optional, for a higher rate limit."""
    from pipelines.lib.mlperf.rounds import round_sort_key

    api_url = api_url.rstrip("/")
    # Newest-created first, so a new round lands on page 1 and changes the page-1 ETag.
    listing = list_pages(f"{api_url}/orgs/{ORG}/repos?per_page=100&page=1&sort=created&direction=desc", api_url,
                         etag=etag, token=token, session=session, timeout=timeout)
    if listing.not_modified:
        return Discovery(etag=etag, not_modified=True, message="repository list unchanged (304)")
    if listing.skip_until is not None:
        return Discovery(etag=etag, skip_until=listing.skip_until, message=listing.message)
    found: dict[str, set[str]] = {name: set() for name in SUITES}
    for repo in listing.items:
        if isinstance(repo, dict) and (m := REPO_PATTERN.match(str(repo.get("name", "")))):
            found[_SUITE_OF_REPOSITORY[m.group(1)]].add(m.group(2))
    return Discovery(rounds_by_suite={name: sorted(rounds, key=round_sort_key) for name, rounds in found.items()},
                     etag=listing.etag,
                     message=", ".join(f"{len(found[name])} {suite.label}" for name, suite in SUITES.items())
                     + " rounds listed")


def listed_rounds(base, *, api_url: str = DEFAULT_GITHUB_API_URL, token: str | None = None
                  ) -> tuple[dict[str, list[str]] | None, str]:
    """Every suite's rounds as GitHub lists them now, for a refresh's default rounds: asked conditionally on the
    last listing (kept in `raw/discovery/rounds.json` with its ETag); GitHub unreachable or rate-limited: the
    last listing, said so; never listed: None. Returns (rounds by suite, a note for the person)."""
    import json
    from datetime import UTC, datetime

    from pipelines.lib.io.files import atomic_write_text
    from pipelines.lib.io.paths import raw_dir
    from pipelines.lib.io.retry import FetchError

    kept = raw_dir("discovery", base) / "rounds.json"
    try:
        previous = json.loads(kept.read_text())
    except (OSError, ValueError):
        previous = {}
    if previous.get("api_url") != api_url:
        previous = {}
    try:
        found = discover_rounds(previous.get("etag"), api_url=api_url, token=token)
        problem = found.message if found.skip_until is not None else ""
    except FetchError as exc:
        found, problem = None, f"GitHub could not be read ({exc})"
    if found is not None and not problem and not found.not_modified:
        kept.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(kept, json.dumps({"api_url": api_url, "etag": found.etag, "rounds": found.rounds_by_suite,
                                            "listed_at": datetime.now(UTC).isoformat(timespec="seconds")}))
        return found.rounds_by_suite, ""
    if isinstance(previous.get("rounds"), dict):
        if found is not None and found.not_modified:
            return previous["rounds"], ""
        return previous["rounds"], f"{problem}: the rounds as listed {str(previous.get('listed_at', ''))[:10]}"
    return None, problem or "GitHub's repository list is unavailable"
