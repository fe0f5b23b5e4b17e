"""Errors of a fetch, the retry policy and the one retry loop around a request.

`FetchError` (and its kinds: a limit exceeded, an unsafe URL) is what every fetch raises;
`RetryableError` marks an attempt another may fix (429, 5xx, a truncated body). `with_retries`
runs an attempt under a `RetryPolicy` with backoff (honouring Retry-After), never retrying a host
that cannot be reached; `send` makes one request and classifies its status.
"""

from __future__ import annotations

import email.utils
import math
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import requests

from pipelines.lib.io.redaction import redact

if TYPE_CHECKING:
    from pipelines.lib.io.bounded import Limits

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


def one_line(exc: BaseException) -> str:
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


def with_retries(url: str, policy: RetryPolicy, attempt: Callable[[], T], limits: Limits | None = None) -> T:
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
            cause = one_line(exc)
        except requests.RequestException as exc:  # bad URL, too many redirects, ...: not transient
            raise FetchError(f"{url}: {one_line(exc)}") from exc
        if n < attempts:
            delay = _delay(policy, n, retry_after)
            if limits is not None and delay >= limits.remaining():
                break  # waiting would pass the deadline
            time.sleep(delay)
    raise FetchError(f"{url}: gave up after {n} attempts; last error: {cause}")


def send(session: requests.Session, method: str, url: str, policy: RetryPolicy, stream: bool,
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
