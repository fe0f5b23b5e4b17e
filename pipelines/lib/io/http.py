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
import socket
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit
from urllib.request import url2pathname

import requests
import urllib3.exceptions

from pipelines.lib.io.files import atomic_write_bytes, atomic_write_text, temp_path
from pipelines.lib.io.hosts import allowed_hosts
from pipelines.lib.io.limits import human, limit
from pipelines.lib.io.redaction import redact, redact_bytes

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
    """A source could not be fetched; the message names the URL and the cause (secrets redacted)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class LimitExceeded(FetchError):
    """A download went over a configured limit (size, rate, deadline): stopped, never retried."""


class UnsafeURL(FetchError):
    """A URL found in an upstream response points somewhere the configuration does not allow."""


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
    # Limits; None means the setting in `pipelines.lib.io.limits` (environment variable or default).
    max_bytes: int | None = None  # body bytes, on the wire and decoded
    min_rate_bytes: int | None = None  # abandon a transfer slower than this many bytes/second ...
    min_rate_seconds: float | None = None  # ... measured over this window
    deadline_seconds: float | None = None  # one download, every attempt and wait included


@dataclass(frozen=True)
class _Limits:
    max_bytes: int
    min_rate_bytes: int
    min_rate_seconds: float
    deadline_seconds: float
    started: float

    @classmethod
    def of(cls, policy: RetryPolicy) -> _Limits:
        return cls(
            policy.max_bytes if policy.max_bytes is not None else limit("max_response_bytes"),
            policy.min_rate_bytes if policy.min_rate_bytes is not None else limit("min_rate_bytes_per_second"),
            policy.min_rate_seconds if policy.min_rate_seconds is not None else limit("min_rate_seconds"),
            policy.deadline_seconds if policy.deadline_seconds is not None else limit("download_deadline_seconds"),
            time.monotonic(),
        )

    def remaining(self) -> float:
        return self.deadline_seconds - (time.monotonic() - self.started)

    def check_deadline(self, url: str) -> None:
        if self.remaining() <= 0:
            raise LimitExceeded(f"{url}: download deadline of {self.deadline_seconds:g} s passed "
                                "(MLPERF_DOWNLOAD_DEADLINE_SECONDS); abandoned")

    def read_timeout(self, policy: RetryPolicy) -> tuple[float, float]:
        # A socket silent for the whole rate window is slower than any minimum rate.
        return policy.timeout[0], min(policy.timeout[1], self.min_rate_seconds)


class RetryableError(Exception):
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
    return datetime.now(UTC).isoformat(timespec="seconds")


def _one_line(exc: BaseException) -> str:
    # requests nests urllib3 errors into long multi-line reprs; logs and asset metadata want one line.
    text = redact(" ".join(str(exc).split()))[:300]
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


def retry_after_seconds(value: str) -> float | None:
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
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _delay(policy: RetryPolicy, attempt: int, retry_after: str | None) -> float:
    if retry_after is not None and (seconds := retry_after_seconds(retry_after)) is not None:
        return min(max(seconds, 0.0), policy.max_backoff_seconds)
    base = policy.backoff_seconds * 2 ** (attempt - 1)
    # Jitter keeps parallel assets from retrying against the same server in lock-step.
    return min(base * (1 + random.uniform(0, 0.1)), policy.max_backoff_seconds)


def _with_retries(url: str, policy: RetryPolicy, attempt: Callable[[], T], limits: _Limits | None = None) -> T:
    """The one retry loop: run `attempt` until it returns, a permanent error, or attempts run out
    (or the download's deadline passes)."""
    attempts = max(1, policy.max_attempts)
    cause = "no attempt made"
    for n in range(1, attempts + 1):
        if limits is not None:
            limits.check_deadline(url)
        retry_after = None
        try:
            return attempt()
        except RetryableError as exc:
            cause, retry_after = str(exc), exc.retry_after
        except _TRANSIENT as exc:
            if (why := _unreachable(exc)) is not None:
                raise FetchError(f"{url}: {why}, not retried") from exc
            cause = _one_line(exc)
        except requests.RequestException as exc:  # bad URL, too many redirects, ...: not transient
            raise FetchError(f"{url}: {_one_line(exc)}") from exc
        if n < attempts:
            delay = _delay(policy, n, retry_after)
            if limits is not None and delay >= limits.remaining():
                break  # waiting would pass the deadline
            time.sleep(delay)
    raise FetchError(f"{url}: gave up after {n} attempts; last error: {cause}")


def _send(session: requests.Session, method: str, url: str, policy: RetryPolicy, stream: bool,
          **kwargs: Any) -> requests.Response:
    """One request; classifies the status as success, retryable or permanent."""
    kwargs.setdefault("timeout", policy.timeout)
    resp = session.request(method, url, stream=stream, **kwargs)
    status = resp.status_code
    if status == 429 or status >= 500:
        resp.close()
        raise RetryableError(f"HTTP {status} {resp.reason}", resp.headers.get("Retry-After"))
    if status >= 400:
        resp.close()
        raise FetchError(f"{url}: HTTP {status} {resp.reason} (not retried)")
    return resp


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
    result = FetchResult(dest, True, hashlib.sha256(body).hexdigest(), len(body), etag, last_modified, url, _now())
    _meta_path(dest).unlink(missing_ok=True)
    atomic_write_bytes(dest, body)
    meta = {k: v for k, v in asdict(result).items() if k not in ("path", "changed")}
    atomic_write_text(_meta_path(dest), json.dumps(meta, indent=2))
    return result


def recorded_etag(dest: Path, url: str) -> str | None:
    """The ETag `url` answered when its copy in `dest` was kept (None: no such copy)."""
    meta = _read_meta(dest, url) if dest.is_file() else None
    return meta.get("etag") if meta else None


def _stream_to_temp(chunks: Iterable[bytes], dest: Path, finish: Callable[[], None]) -> tuple[Path, str, int]:
    """Write chunks to a fresh temp file beside dest (same filesystem, so os.replace is atomic), synced
    to disk. Whatever goes wrong (a limit, a dropped connection, a full disk), the temp file is removed."""
    tmp = temp_path(dest)
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


_DECODERS = {"gzip": 47, "x-gzip": 47, "deflate": 15}  # zlib wbits: 47 = gzip header, 15 = zlib header
# Errors urllib3 raises from `raw.read1` (requests only wraps them inside iter_content).
_RAW_TRANSIENT = (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError,
                  urllib3.exceptions.SSLError, ConnectionError, TimeoutError)


class _BoundedBody:
    """A response body read under the limits: at most `max_bytes` on the wire and after decoding
    `Content-Encoding` (gzip/deflate; any other encoding is refused), no slower than the minimum
    rate over its window, within the deadline. Reads return whatever arrived (`read1`), so a
    dripping server is noticed on time, and decoded pieces are at most CHUNK_SIZE each."""

    def __init__(self, resp: requests.Response, url: str, limits: _Limits) -> None:
        self.resp, self.url, self.limits = resp, url, limits
        self.wire = 0
        self.decoded = 0
        encoding = resp.headers.get("Content-Encoding", "").strip().lower()
        if encoding not in ("", "identity") and encoding not in _DECODERS:
            raise FetchError(f"{url}: Content-Encoding {encoding!r} is not supported; refused")
        self.decoder = zlib.decompressobj(_DECODERS[encoding]) if encoding in _DECODERS else None
        declared = resp.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limits.max_bytes:
            raise LimitExceeded(f"{url}: Content-Length {declared} is over the {human(limits.max_bytes)} limit; "
                                "not downloaded")
        self.window_start, self.window_bytes = time.monotonic(), 0

    def _too_big(self, what: str) -> LimitExceeded:
        return LimitExceeded(f"{self.url}: {what} over the {human(self.limits.max_bytes)} limit; "
                             "stopped at the limit and the partial file removed")

    def _check_pace(self) -> None:
        self.limits.check_deadline(self.url)
        now = time.monotonic()
        elapsed = now - self.window_start
        if elapsed >= self.limits.min_rate_seconds:
            if self.wire - self.window_bytes < self.limits.min_rate_bytes * elapsed:
                raise LimitExceeded(
                    f"{self.url}: slower than {self.limits.min_rate_bytes} bytes/s over "
                    f"{self.limits.min_rate_seconds:g} s ({self.wire - self.window_bytes} bytes in {elapsed:.0f} s); "
                    "abandoned")
            self.window_start, self.window_bytes = now, self.wire

    def _emit(self, piece: bytes) -> bytes:
        self.decoded += len(piece)
        if self.decoded > self.limits.max_bytes:
            raise self._too_big("decoded body")
        return piece

    def __iter__(self):
        raw = self.resp.raw
        while True:
            try:
                data = raw.read1(CHUNK_SIZE, decode_content=False)
            except urllib3.exceptions.ReadTimeoutError as exc:
                self._check_pace()  # a silent socket for the whole window: too slow
                raise requests.exceptions.ConnectionError(_one_line(exc)) from exc
            except _RAW_TRANSIENT as exc:
                raise requests.exceptions.ChunkedEncodingError(_one_line(exc)) from exc
            if not data:
                break
            self.wire += len(data)
            if self.wire > self.limits.max_bytes:
                raise self._too_big("body")
            self._check_pace()
            if self.decoder is None:
                yield self._emit(data)
                continue
            try:
                piece = self.decoder.decompress(data, CHUNK_SIZE)
                while True:
                    if piece:
                        yield self._emit(piece)
                    if not self.decoder.unconsumed_tail:
                        break
                    piece = self.decoder.decompress(self.decoder.unconsumed_tail, CHUNK_SIZE)
            except zlib.error as exc:
                raise FetchError(f"{self.url}: body does not decode as its Content-Encoding says: {exc}") from exc
        if self.decoder is not None:
            tail = self.decoder.flush()
            if tail:
                yield self._emit(tail)

    def check_complete(self) -> None:
        """Raise if fewer bytes arrived than Content-Length promised (the server closed early)."""
        declared = self.resp.headers.get("Content-Length", "")
        if declared.isdigit() and self.wire < int(declared):
            raise RetryableError(f"truncated body: got {self.wire} of {declared} bytes")


def _read_local(path: Path, url: str, max_bytes: int) -> Iterable[bytes]:
    with open(path, "rb") as src:
        size = 0
        while chunk := src.read(CHUNK_SIZE):
            size += len(chunk)
            if size > max_bytes:
                raise LimitExceeded(f"{url}: file over the {human(max_bytes)} limit; partial copy removed")
            yield chunk


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
            before = local.stat()  # taken before reading: a file changed meanwhile is re-read next time
            tmp, sha, size = _stream_to_temp(_read_local(local, url, _Limits.of(policy).max_bytes), dest, lambda: None)
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
                                   previous.get("last_modified"), url, _now())
            tmp, sha, size, etag, last_modified = outcome
        changed = previous is None or previous.get("sha256") != sha
        # Drop the old sidecar first: a crash between the two replaces then costs a full
        # re-download instead of a sidecar that describes the wrong file.
        _meta_path(dest).unlink(missing_ok=True)
        os.replace(tmp, dest)  # even when unchanged: identical bytes, and dest is certainly intact
        result = FetchResult(dest, changed, sha, size, etag, last_modified, url, _now())
        meta = {k: v for k, v in asdict(result).items() if k not in ("path", "changed")}
        if local is not None:
            meta["source_size"], meta["source_mtime_ns"] = before.st_size, before.st_mtime_ns
        atomic_write_text(_meta_path(dest), json.dumps(meta, indent=2))
        return result
    except FetchError:
        raise
    except OSError as exc:  # missing local file, unwritable dest, disk full, ...
        raise FetchError(f"{url}: {_one_line(exc)}") from exc


def _fetch_http(session: requests.Session, url: str, dest: Path, policy: RetryPolicy,
                previous: dict[str, Any] | None, headers: dict | None):
    """Download to a temp file: (tmp, sha256, size, etag, last_modified), or None on 304."""
    send_headers = {"Accept-Encoding": "gzip, deflate", **(headers or {})}
    if previous is not None:
        if previous.get("etag"):
            send_headers["If-None-Match"] = previous["etag"]
        if previous.get("last_modified"):
            send_headers["If-Modified-Since"] = previous["last_modified"]
    limits = _Limits.of(policy)

    def attempt():
        # Body streaming happens inside the attempt, so a dropped/truncated body is retried too.
        with _send(session, "GET", url, policy, True, headers=send_headers,
                   timeout=limits.read_timeout(policy)) as resp:
            if resp.status_code == 304:
                if previous is None:
                    raise FetchError(f"{url}: HTTP 304 Not Modified but there is no local copy to keep")
                return None
            body = _BoundedBody(resp, url, limits)
            tmp, sha, size = _stream_to_temp(body, dest, body.check_complete)
            return tmp, sha, size, resp.headers.get("ETag"), resp.headers.get("Last-Modified")

    return _with_retries(url, policy, attempt, limits)


def get_json(url: str, *, params: dict | None = None, headers: dict | None = None,
             policy: RetryPolicy = RetryPolicy(), session: requests.Session | None = None) -> tuple[object, bytes]:
    """GET and parse JSON under the limits (size, rate, deadline, nesting depth); returns
    (parsed, raw body bytes) so callers can archive the exact bytes."""
    from pipelines.lib.io.jsonsafe import loads_bounded

    own_session = session is None
    http = session or make_session()
    limits = _Limits.of(policy)
    send_headers = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate", **(headers or {})}

    def attempt() -> tuple[bytes, str]:
        with _send(http, "GET", url, policy, True, params=params, headers=send_headers,
                   timeout=limits.read_timeout(policy)) as resp:
            reader = _BoundedBody(resp, url, limits)
            body = b"".join(reader)
            reader.check_complete()
            return body, url

    try:
        body, shown = _with_retries(url, policy, attempt, limits)
    finally:
        if own_session:
            http.close()
    body = redact_bytes(body)  # kept as raw files and parsed into rows: no secret may ride along
    try:
        return loads_bounded(body), body
    except ValueError as exc:  # includes UnicodeDecodeError; a consistent bad body won't improve on retry
        raise FetchError(f"{shown}: invalid JSON in {len(body)}-byte body: {_one_line(exc)}") from exc


def read_bounded(resp: requests.Response, url: str, policy: RetryPolicy = RetryPolicy()) -> bytes:
    """The whole body of a streamed response, read under the policy's limits."""
    reader = _BoundedBody(resp, url, _Limits.of(policy))
    body = b"".join(reader)
    reader.check_complete()
    return body


def check_followed_url(link: str, base_url: str, what: str) -> str:
    """`link` (found in an upstream response), resolved against `base_url`, if it may be followed.

    Allowed: http(s) on the base URL's host or a host in `MLPERF_ALLOWED_HOSTS` (comma-separated,
    for mirrors). A base that is itself local (file:// or a path) allows only relative links
    that stay inside its directory. Anything else (file://, other schemes, other hosts) raises UnsafeURL.
    """
    from urllib.parse import urljoin

    link = str(link).strip()
    base_parts = urlsplit(base_url)
    if base_parts.scheme not in ("http", "https"):
        link_parts = urlsplit(link)
        if link_parts.scheme or link_parts.netloc or link.startswith("/"):
            raise UnsafeURL(f"{what}: refusing {link!r}: the source is local, only relative links are followed")
        base_dir = (Path(url2pathname(base_parts.path)) if base_parts.scheme == "file" else Path(base_url))
        base_dir = base_dir.resolve() if base_dir.is_dir() else base_dir.resolve().parent
        target = (base_dir / url2pathname(link_parts.path)).resolve()
        if base_dir not in target.parents:
            raise UnsafeURL(f"{what}: refusing {link!r}: it leaves {base_dir}")
        return str(target)
    resolved = urljoin(base_url, link)
    parts = urlsplit(resolved)
    allowed = {(base_parts.hostname or "").lower()} | allowed_hosts()
    if parts.scheme not in ("http", "https"):
        raise UnsafeURL(f"{what}: refusing {resolved!r}: only http(s) links are followed")
    if (parts.hostname or "").lower() not in allowed:
        raise UnsafeURL(f"{what}: refusing {resolved!r}: host {parts.hostname!r} is not the configured host "
                        f"{base_parts.hostname!r} (add it to MLPERF_ALLOWED_HOSTS to allow a mirror)")
    return resolved


def unchanged_upstream(url: str, dest: Path, *, timeout: tuple[float, float] = (5.0, 10.0),
                       session: requests.Session | None = None) -> bool:
    """True only when the copy in `dest` (fetched from `url`) is certainly still what `url` serves:
    a 304 to a conditional GET, or a local file with the recorded size and modification time.
    Anything else (no copy, a 200, an error) is False: the caller then fetches for real. Reads no
    body and writes nothing."""
    url, dest = str(url), Path(dest)
    previous = _read_meta(dest, url) if dest.is_file() else None
    if previous is None:
        return False
    try:
        local = _local_source(url)
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
