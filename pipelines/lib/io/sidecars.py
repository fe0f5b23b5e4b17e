"""The sidecar `<dest>.meta.json` beside each kept download, and the conditional GET it enables.

The sidecar remembers the URL (redacted), ETag / Last-Modified, sha256 and size of the file, so the
next fetch can be conditional and report `changed=False`, callers need not hash the file again, and
the pre-flight can ask (`unchanged_upstream`) whether a source changed without downloading it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from pipelines.lib.io.files import atomic_write_bytes, atomic_write_text
from pipelines.lib.io.redaction import redact
from pipelines.lib.io.retry import FetchError, make_session
from pipelines.lib.io.urls import local_source


@dataclass(frozen=True)
class FetchResult:
    path: Path
    changed: bool
    sha256: str
    size: int
    etag: str | None
    last_modified: str | None
    url: str
    fetched_at: str


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def meta_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".meta.json")


def _sidecar(dest: Path) -> dict[str, Any] | None:
    """The sidecar of the copy in `dest`, if it still describes that file."""
    try:
        meta = json.loads(meta_path(dest).read_text())
        # A size mismatch means dest was changed behind our back: don't trust the sidecar.
        if meta.get("size") == dest.stat().st_size:
            return meta
    except (OSError, ValueError, AttributeError):
        pass
    return None


def read_meta(dest: Path, url: str) -> dict[str, Any] | None:
    """The sidecar of the copy in `dest`, if it describes that file as fetched from `url`."""
    meta = _sidecar(dest)
    # sidecars are written redacted: a URL with credentials is stored without them
    return meta if meta is not None and meta.get("url") in (url, redact(url)) else None


def recorded_sha256(dest: Path) -> str | None:
    """The sha256 computed while `dest` was fetched, so callers need not read the file again."""
    meta = _sidecar(dest)
    return meta.get("sha256") if meta else None


def keep_response(dest: Path, url: str, body: bytes, etag: str | None, last_modified: str | None = None) -> FetchResult:
    """Keep a response read by other means (an API listing of several pages) as `fetch_to_file` keeps a
    download: the file and its sidecar, so a later conditional GET of `url` (`unchanged_upstream`, or
    `recorded_etag`) can ask whether it changed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    result = FetchResult(dest, True, hashlib.sha256(body).hexdigest(), len(body), etag, last_modified, url, now())
    meta_path(dest).unlink(missing_ok=True)
    atomic_write_bytes(dest, body)
    meta = {k: v for k, v in asdict(result).items() if k not in ("path", "changed")}
    atomic_write_text(meta_path(dest), json.dumps(meta, indent=2))
    return result


def recorded_etag(dest: Path, url: str) -> str | None:
    """The ETag `url` answered when its copy in `dest` was kept (None: no such copy)."""
    meta = read_meta(dest, url) if dest.is_file() else None
    return meta.get("etag") if meta else None


def unchanged_upstream(url: str, dest: Path, *, timeout: tuple[float, float] = (5.0, 10.0),
                       session: requests.Session | None = None) -> bool:
    """True only when the copy in `dest` (fetched from `url`) is certainly still what `url` serves:
    a 304 to a conditional GET, or a local file with the recorded size and modification time.
    Anything else (no copy, a 200, an error) is False: the caller then fetches for real. Reads no
    body and writes nothing."""
    url, dest = str(url), Path(dest)
    previous = read_meta(dest, url) if dest.is_file() else None
    if previous is None:
        return False
    try:
        local = local_source(url)
        if local is not None:
            stat = local.stat()
            return (stat.st_size, stat.st_mtime_ns) == (previous.get("source_size"), previous.get("source_mtime_ns"))
        headers = {}
        if previous.get("etag"):
            headers["If-None-Match"] = previous["etag"]
        if previous.get("last_modified"):
            headers["If-Modified-Since"] = previous["last_modified"]
        if not headers:
            return False
        http = session or make_session()
        try:
            with http.get(url, headers=headers, stream=True, timeout=timeout, allow_redirects=True) as resp:
                return resp.status_code == 304
        finally:
            if session is None:
                http.close()
    except (OSError, FetchError, requests.RequestException):
        return False
