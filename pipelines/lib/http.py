"""Robust fetching of raw sources over HTTP(S), or from a local mirror (file:// URL or path).

No Dagster imports: assets call these helpers and record what a `FetchResult` says.
Downloads are atomic (temp file in the same directory, fsync, `os.replace`), so a failed or
interrupted fetch never leaves a half-written `dest`. A sidecar `<dest>.meta.json` remembers the
ETag / Last-Modified / sha256, so the next fetch can be conditional and report `changed=False`.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import math
import os
import random
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit
from urllib.request import url2pathname

import requests

CHUNK_SIZE = 1 << 20
T = TypeVar("T")

# Failures another attempt may fix. ConnectTimeout/ReadTimeout are subclasses of these.
_TRANSIENT = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,  # connection dropped mid-body
    requests.exceptions.ContentDecodingError,  # usually a truncated compressed body
)


class FetchError(Exception):
    """A source could not be fetched; the message names the URL and the cause."""


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


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 60.0
    timeout: tuple[float, float] = (10.0, 120.0)


class _Retryable(Exception):
    """An attempt failed in a way that another attempt may fix (429, 5xx, truncated body)."""

    def __init__(self, cause: str, retry_after: str | None = None) -> None:
        super().__init__(cause)
        self.retry_after = retry_after


def make_session(user_agent: str = "mlperf-warehouse") -> requests.Session:
    # The default adapter has urllib3 retries off; keep it that way so our loop is the only one
    # and `max_attempts` means what it says.
    session = requests.Session()
    session.headers["User-Agent"] = user_agent
    return session


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _one_line(exc: BaseException) -> str:
    # requests nests urllib3 errors into long multi-line reprs; logs and asset metadata want one line.
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unreachable(exc: BaseException) -> str | None:
    """Why a connection could not be made when another attempt cannot help: the host name does not
    resolve (offline, or a typo) or the port refuses. Timeouts are not counted: they may pass."""
    seen, todo = set(), [exc]
    while todo:
        cause = todo.pop()
        if cause is None or id(cause) in seen or len(seen) > 12:
            continue
        seen.add(id(cause))
        if isinstance(cause, socket.gaierror) or type(cause).__name__ == "NameResolutionError":
            return "host not found"
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        todo += [getattr(cause, "reason", None), cause.__cause__, cause.__context__,
                 *(a for a in getattr(cause, "args", ()) if isinstance(a, BaseException))]
    return None


def _retry_after_seconds(value: str) -> float | None:
    """Retry-After is either delta-seconds or an HTTP-date; None when unparseable."""
    try:
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (when - datetime.now(timezone.utc)).total_seconds()


def _delay(policy: RetryPolicy, attempt: int, retry_after: str | None) -> float:
    if retry_after is not None and (seconds := _retry_after_seconds(retry_after)) is not None:
        return min(max(seconds, 0.0), policy.max_backoff_seconds)
    base = policy.backoff_seconds * 2 ** (attempt - 1)
    # Jitter keeps parallel assets from retrying against the same server in lock-step.
    return min(base * (1 + random.uniform(0, 0.1)), policy.max_backoff_seconds)


def _with_retries(url: str, policy: RetryPolicy, attempt: Callable[[], T]) -> T:
    """The one retry loop: run `attempt` until it returns, a permanent error, or attempts run out."""
    attempts = max(1, policy.max_attempts)
    cause = "no attempt made"
    for n in range(1, attempts + 1):
        retry_after = None
        try:
            return attempt()
        except _Retryable as exc:
            cause, retry_after = str(exc), exc.retry_after
        except _TRANSIENT as exc:
            if (why := _unreachable(exc)) is not None:
                raise FetchError(f"{url}: {why}, not retried") from exc
            cause = _one_line(exc)
        except requests.RequestException as exc:  # bad URL, too many redirects, ...: not transient
            raise FetchError(f"{url}: {_one_line(exc)}") from exc
        if n < attempts:
            time.sleep(_delay(policy, n, retry_after))
    raise FetchError(f"{url}: gave up after {attempts} attempts; last error: {cause}")


def _send(session: requests.Session, method: str, url: str, policy: RetryPolicy, stream: bool,
          **kwargs: Any) -> requests.Response:
    """One request; classifies the status as success, retryable or permanent."""
    kwargs.setdefault("timeout", policy.timeout)
    resp = session.request(method, url, stream=stream, **kwargs)
    status = resp.status_code
    if status == 429 or status >= 500:
        resp.close()
        raise _Retryable(f"HTTP {status} {resp.reason}", resp.headers.get("Retry-After"))
    if status >= 400:
        resp.close()
        raise FetchError(f"{url}: HTTP {status} {resp.reason} (not retried)")
    return resp


def _check_complete(resp: requests.Response) -> None:
    """Raise if fewer bytes arrived than Content-Length promised (the server closed early)."""
    declared = resp.headers.get("Content-Length", "")
    if resp.request.method == "HEAD" or resp.status_code in (204, 304) or not declared.isdigit():
        return
    tell = getattr(resp.raw, "tell", None)  # bytes on the wire, i.e. before any gzip decoding
    received = tell() if tell else len(resp.content)
    if received < int(declared):
        raise _Retryable(f"truncated body: got {received} of {declared} bytes")


def request_with_retries(session: requests.Session, method: str, url: str, *, policy: RetryPolicy,
                         stream: bool = False, **kwargs: Any) -> requests.Response:
    """Send with retries. With stream=False the body is read inside the loop, so a dropped or
    truncated body is retried too; with stream=True only reaching a good status is retried and the
    caller reads (and closes) the body."""

    def attempt() -> requests.Response:
        resp = _send(session, method, url, policy, stream, **kwargs)
        if not stream:
            _check_complete(resp)
        return resp

    return _with_retries(url, policy, attempt)


def _meta_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".meta.json")


def _sidecar(dest: Path) -> dict[str, Any] | None:
    """The sidecar of the copy in `dest`, if it still describes that file."""
    try:
        meta = json.loads(_meta_path(dest).read_text())
        # A size mismatch means dest was changed behind our back: don't trust the sidecar.
        if meta.get("size") == dest.stat().st_size:
            return meta
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _read_meta(dest: Path, url: str) -> dict[str, Any] | None:
    """The sidecar of the copy in `dest`, if it describes that file as fetched from `url`."""
    meta = _sidecar(dest)
    return meta if meta is not None and meta.get("url") == url else None


def recorded_sha256(dest: Path) -> str | None:
    """The sha256 computed while `dest` was fetched, so callers need not read the file again."""
    meta = _sidecar(dest)
    return meta.get("sha256") if meta else None


def _stream_to_temp(chunks: Iterable[bytes], dest: Path, finish: Callable[[], None]) -> tuple[Path, str, int]:
    """Write chunks to a fresh temp file beside dest (same filesystem, so os.replace is atomic)."""
    tmp = dest.with_name(f"{dest.name}.part-{secrets.token_hex(6)}")
    digest, size = hashlib.sha256(), 0
    try:
        with open(tmp, "xb") as out:
            for chunk in chunks:
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
            finish()  # e.g. the Content-Length check, before anything is committed
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, digest.hexdigest(), size


def _local_source(url: str) -> Path | None:
    """The local path for file:// URLs and plain paths; None for http(s)."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        return None
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise FetchError(f"{url}: remote file:// hosts are not supported")
        return Path(url2pathname(parts.path))
    if len(parts.scheme) <= 1:  # no scheme, or a Windows drive letter
        return Path(url)
    raise FetchError(f"{url}: unsupported URL scheme {parts.scheme!r}")


def fetch_to_file(url: str, dest: Path, *, policy: RetryPolicy = RetryPolicy(),
                  session: requests.Session | None = None, conditional: bool = True,
                  headers: dict | None = None) -> FetchResult:
    url, dest = str(url), Path(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        previous = _read_meta(dest, url) if dest.is_file() else None
        local = _local_source(url)
        if local is not None:
            with open(local, "rb") as src:
                mtime = os.fstat(src.fileno()).st_mtime
                tmp, sha, size = _stream_to_temp(iter(lambda: src.read(CHUNK_SIZE), b""), dest, lambda: None)
            etag, last_modified = None, email.utils.formatdate(mtime, usegmt=True)
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
                                   previous.get("last_modified"), url, _now())
            tmp, sha, size, etag, last_modified = outcome
        changed = previous is None or previous.get("sha256") != sha
        # Drop the old sidecar first: a crash between the two replaces then costs a full
        # re-download instead of a sidecar that describes the wrong file.
        _meta_path(dest).unlink(missing_ok=True)
        os.replace(tmp, dest)  # even when unchanged: identical bytes, and dest is certainly intact
        result = FetchResult(dest, changed, sha, size, etag, last_modified, url, _now())
        meta = {k: v for k, v in asdict(result).items() if k not in ("path", "changed")}
        meta_tmp, _, _ = _stream_to_temp([json.dumps(meta, indent=2).encode()], _meta_path(dest), lambda: None)
        os.replace(meta_tmp, _meta_path(dest))
        return result
    except FetchError:
        raise
    except OSError as exc:  # missing local file, unwritable dest, disk full, ...
        raise FetchError(f"{url}: {_one_line(exc)}") from exc


def _fetch_http(session: requests.Session, url: str, dest: Path, policy: RetryPolicy,
                previous: dict[str, Any] | None, headers: dict | None):
    """Download to a temp file: (tmp, sha256, size, etag, last_modified), or None on 304."""
    send_headers = dict(headers or {})
    if previous is not None:
        if previous.get("etag"):
            send_headers["If-None-Match"] = previous["etag"]
        if previous.get("last_modified"):
            send_headers["If-Modified-Since"] = previous["last_modified"]

    def attempt():
        # Body streaming happens inside the attempt, so a dropped/truncated body is retried too.
        with _send(session, "GET", url, policy, True, headers=send_headers) as resp:
            if resp.status_code == 304:
                if previous is None:
                    raise FetchError(f"{url}: HTTP 304 Not Modified but there is no local copy to keep")
                return None
            tmp, sha, size = _stream_to_temp(resp.iter_content(CHUNK_SIZE), dest, lambda: _check_complete(resp))
            return tmp, sha, size, resp.headers.get("ETag"), resp.headers.get("Last-Modified")

    return _with_retries(url, policy, attempt)


def get_json(url: str, *, params: dict | None = None, headers: dict | None = None,
             policy: RetryPolicy = RetryPolicy(), session: requests.Session | None = None) -> tuple[object, bytes]:
    """GET and parse JSON; returns (parsed, raw body bytes) so callers can archive the exact bytes."""
    own_session = session is None
    http = session or make_session()
    try:
        resp = request_with_retries(http, "GET", url, policy=policy, params=params,
                                    headers={"Accept": "application/json", **(headers or {})})
    finally:
        if own_session:
            http.close()
    body = resp.content
    try:
        return json.loads(body), body
    except ValueError as exc:  # includes UnicodeDecodeError; a consistent bad body won't improve on retry
        raise FetchError(f"{resp.url}: invalid JSON in {len(body)}-byte body: {exc}") from exc
