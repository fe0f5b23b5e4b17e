"""Reading a body under the download limits: at most so many bytes (on the wire and decoded), no
slower than the minimum rate, within the deadline.

`Limits` resolves a `RetryPolicy`'s limits against `pipelines.lib.io.limits`; `BoundedBody` reads a
streamed response under them (gzip/deflate decoded); `read_local` reads a local source under the
size limit; `stream_to_temp` writes either to a synced temp file beside the destination.
"""

from __future__ import annotations

import hashlib
import os
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import requests
import urllib3.exceptions

from pipelines.lib.io.files import temp_path
from pipelines.lib.io.limits import human, limit
from pipelines.lib.io.retry import FetchError, LimitExceeded, RetryableError, RetryPolicy, one_line

CHUNK_SIZE = 1 << 20

@dataclass(frozen=True)
class Limits:
    max_bytes: int
    min_rate_bytes: int
    min_rate_seconds: float
    deadline_seconds: float
    started: float

    @classmethod
    def of(cls, policy: RetryPolicy) -> Limits:
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


def stream_to_temp(chunks: Iterable[bytes], dest: Path, finish: Callable[[], None]) -> tuple[Path, str, int]:
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


class BoundedBody:
    """A response body read under the limits: at most `max_bytes` on the wire and after decoding
    `Content-Encoding` (gzip/deflate; any other encoding is refused), no slower than the minimum
    rate over its window, within the deadline. Reads return whatever arrived (`read1`), so a
    dripping server is noticed on time, and decoded pieces are at most CHUNK_SIZE each."""

    def __init__(self, resp: requests.Response, url: str, limits: Limits) -> None:
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
                raise requests.exceptions.ConnectionError(one_line(exc)) from exc
            except _RAW_TRANSIENT as exc:
                raise requests.exceptions.ChunkedEncodingError(one_line(exc)) from exc
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


def read_local(path: Path, url: str, max_bytes: int) -> Iterable[bytes]:
    with open(path, "rb") as src:
        size = 0
        while chunk := src.read(CHUNK_SIZE):
            size += len(chunk)
            if size > max_bytes:
                raise LimitExceeded(f"{url}: file over the {human(max_bytes)} limit; partial copy removed")
            yield chunk


def read_bounded(resp: requests.Response, url: str, policy: RetryPolicy = RetryPolicy()) -> bytes:
    """The whole body of a streamed response, read under the policy's limits."""
    reader = BoundedBody(resp, url, Limits.of(policy))
    body = b"".join(reader)
    reader.check_complete()
    return body
