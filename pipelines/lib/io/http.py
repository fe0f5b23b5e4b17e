"""Robust fetching of raw sources over HTTP(S), or from a local mirror (file:// URL or path):
`fetch_to_file` (a download, kept with its sidecar) and `get_json` (an API answer, parsed).

No Dagster imports: assets call these helpers and record what a `FetchResult` says.
Downloads are atomic (temp file in the same directory, fsync, `os.replace`), so a failed or
interrupted fetch never leaves a half-written `dest`. A sidecar `<dest>.meta.json` remembers the
ETag / Last-Modified / sha256, so the next fetch can be conditional and report `changed=False`.
Their parts: errors and the retry loop in `retry`, the limits in `bounded`, the sidecars and the
conditional GET in `sidecars`, what a URL names and which links may be followed in `urls`.
"""

from __future__ import annotations

import email.utils
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import requests

from pipelines.lib.io.bounded import BoundedBody, Limits, read_local, stream_to_temp
from pipelines.lib.io.files import atomic_write_text
from pipelines.lib.io.redaction import redact_bytes
from pipelines.lib.io.retry import FetchError, RetryPolicy, make_session, one_line, send, with_retries
from pipelines.lib.io.sidecars import FetchResult, meta_path, now, read_meta
from pipelines.lib.io.urls import local_source


def fetch_to_file(url: str, dest: Path, *, policy: RetryPolicy = RetryPolicy(),
                  session: requests.Session | None = None, conditional: bool = True,
                  headers: dict | None = None) -> FetchResult:
    url, dest = str(url), Path(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        previous = read_meta(dest, url) if dest.is_file() else None
        local = local_source(url)
        if local is not None:
            before = local.stat()  # taken before reading: a file changed meanwhile is re-read next time
            tmp, sha, size = stream_to_temp(read_local(local, url, Limits.of(policy).max_bytes), dest, lambda: None)
            etag, last_modified = None, email.utils.formatdate(before.st_mtime, usegmt=True)
        else:
            own_session = session is None
            http = session or make_session()
            try:
                outcome = _fetch_http(http, url, dest, policy, previous if conditional else None, headers)
            finally:
                if own_session:
                    http.close()
            if outcome is None:  # 304: keep dest and its sidecar exactly as they are
                assert previous is not None
                return FetchResult(dest, False, previous["sha256"], previous["size"], previous.get("etag"),
                                   previous.get("last_modified"), url, now())
            tmp, sha, size, etag, last_modified = outcome
        changed = previous is None or previous.get("sha256") != sha
        # Drop the old sidecar first: a crash between the two replaces then costs a full
        # re-download instead of a sidecar that describes the wrong file.
        meta_path(dest).unlink(missing_ok=True)
        os.replace(tmp, dest)  # even when unchanged: identical bytes, and dest is certainly intact
        result = FetchResult(dest, changed, sha, size, etag, last_modified, url, now())
        meta = {k: v for k, v in asdict(result).items() if k not in ("path", "changed")}
        if local is not None:
            meta["source_size"], meta["source_mtime_ns"] = before.st_size, before.st_mtime_ns
        atomic_write_text(meta_path(dest), json.dumps(meta, indent=2))
        return result
    except FetchError:
        raise
    except OSError as exc:  # missing local file, unwritable dest, disk full, ...
        raise FetchError(f"{url}: {one_line(exc)}") from exc


def _fetch_http(session: requests.Session, url: str, dest: Path, policy: RetryPolicy,
                previous: dict[str, Any] | None, headers: dict | None):
    """Download to a temp file: (tmp, sha256, size, etag, last_modified), or None on 304."""
    send_headers = {"Accept-Encoding": "gzip, deflate", **(headers or {})}
    if previous is not None:
        if previous.get("etag"):
            send_headers["If-None-Match"] = previous["etag"]
        if previous.get("last_modified"):
            send_headers["If-Modified-Since"] = previous["last_modified"]
    limits = Limits.of(policy)

    def attempt():
        # Body streaming happens inside the attempt, so a dropped/truncated body is retried too.
        with send(session, "GET", url, policy, True, headers=send_headers,
                   timeout=limits.read_timeout(policy)) as resp:
            if resp.status_code == 304:
                if previous is None:
                    raise FetchError(f"{url}: HTTP 304 Not Modified but there is no local copy to keep")
                return None
            body = BoundedBody(resp, url, limits)
            tmp, sha, size = stream_to_temp(body, dest, body.check_complete)
            return tmp, sha, size, resp.headers.get("ETag"), resp.headers.get("Last-Modified")

    return with_retries(url, policy, attempt, limits)


def get_json(url: str, *, params: dict | None = None, headers: dict | None = None,
             policy: RetryPolicy = RetryPolicy(), session: requests.Session | None = None) -> tuple[object, bytes]:
    """GET and parse JSON under the limits (size, rate, deadline, nesting depth); returns
    (parsed, raw body bytes) so callers can archive the exact bytes."""
    from pipelines.lib.io.jsonsafe import loads_bounded

    own_session = session is None
    http = session or make_session()
    limits = Limits.of(policy)
    send_headers = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate", **(headers or {})}

    def attempt() -> tuple[bytes, str]:
        with send(http, "GET", url, policy, True, params=params, headers=send_headers,
                   timeout=limits.read_timeout(policy)) as resp:
            reader = BoundedBody(resp, url, limits)
            body = b"".join(reader)
            reader.check_complete()
            return body, url

    try:
        body, shown = with_retries(url, policy, attempt, limits)
    finally:
        if own_session:
            http.close()
    body = redact_bytes(body)  # kept as raw files and parsed into rows: no secret may ride along
    try:
        return loads_bounded(body), body
    except ValueError as exc:  # includes UnicodeDecodeError; a consistent bad body won't improve on retry
        raise FetchError(f"{shown}: invalid JSON in {len(body)}-byte body: {one_line(exc)}") from exc
