"""Fetch and stage one round: the plain functions behind the Dagster assets."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

from ..limits import limit
from ..http import FetchResult, RetryPolicy, fetch_to_file, recorded_sha256
from ..paths import ensure_inside, raw_dir, staging_dir
from ..rounds import archive_url
from ..staging import staged_files, write_staged
from .tables import TABLES, round_frames

_CODE_FILES = sorted(Path(__file__).parent.glob("*.py")) + [Path(__file__).parents[3] / "schemas" / "mlperf.py"]


def parser_version() -> str:
    """Changes when the parsing code or the official rules package changes: staged data is redone."""
    digest = hashlib.sha256(metadata.version("mlperf-logging").encode())
    for path in _CODE_FILES:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def archive_path(round_version: str, base: Path) -> Path:
    return ensure_inside(raw_dir("mlperf", base) / f"training_results_{round_version}.tar.gz", base)


def fetch_round(round_version: str, url_template: str, base: Path, policy: RetryPolicy) -> FetchResult:
    dest = archive_path(round_version, base)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if policy.max_bytes is None:  # an archive's own limit, not that of any other response
        policy = replace(policy, max_bytes=limit("max_archive_bytes"))
    return fetch_to_file(archive_url(url_template, round_version), dest, policy=policy)


@dataclass
class StageResult:
    skipped: bool
    row_counts: dict[str, int]
    quarantine_count: int
    seconds: float
    archive_sha256: str


def _marker(round_version: str, base: Path) -> Path:
    return staging_dir("_meta", base) / f"mlperf-{round_version}.json"


def stage_round(round_version: str, base: Path) -> StageResult:
    """Parse the round's archive into staged Parquet, unless the same archive was staged by this code."""
    archive = archive_path(round_version, base)
    sha = recorded_sha256(archive)  # hashed once, while it was downloaded
    if sha is None:  # an archive put there by other means
        with open(archive, "rb") as fh:
            sha = hashlib.file_digest(fh, "sha256").hexdigest()
    version = parser_version()
    marker = _marker(round_version, base)
    if marker.exists():
        previous = json.loads(marker.read_text())
        staged = all(any(p.stem == round_version for p in staged_files(t, base)) for t in TABLES)
        if staged and previous.get("archive_sha256") == sha and previous.get("parser_version") == version:
            return StageResult(True, previous["row_counts"], previous["quarantine_count"], 0.0, sha)
    started = time.perf_counter()
    frames = round_frames(archive, round_version)
    for table in TABLES:
        write_staged(table, round_version, frames[table], base)
    write_staged("quarantine", f"mlperf-{round_version}", frames["quarantine"], base)
    counts = {table: frames[table].height for table in TABLES}
    result = StageResult(False, counts, frames["quarantine"].height, time.perf_counter() - started, sha)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({
        "archive_sha256": sha, "parser_version": version, "row_counts": counts,
        "quarantine_count": result.quarantine_count,
    }))
    return result
