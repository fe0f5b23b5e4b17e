"""Downloads against a hostile server (tests/support/hostile_server.py): every limit holds, the
partial file is removed, and nothing is retried that another attempt would not fix."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from pipelines.lib.io.files import TEMP_GLOB, TEMP_SUFFIX
from pipelines.lib.io.http import fetch_to_file, get_json
from pipelines.lib.io.retry import FetchError, LimitExceeded, RetryPolicy, UnsafeURL
from pipelines.lib.io.urls import check_followed_url
from support.hostile_server import (
    HostileServer,
    deep_json,
    drip,
    encoded,
    endless,
    fixed,
    gzip_bomb,
    huge_length,
    short_and_hang,
    steady,
)

pytestmark = [pytest.mark.slow]

MiB = 1 << 20
# Small limits so the tests run in seconds; the defaults are the same code with bigger numbers.
POLICY = RetryPolicy(max_attempts=3, backoff_seconds=0.01, timeout=(2.0, 10.0), max_bytes=4 * MiB,
                     min_rate_bytes=1000, min_rate_seconds=2.0, deadline_seconds=30.0)


@pytest.fixture
def server():
    with HostileServer() as s:
        yield s


def _fetch_watching_size(url: str, dest: Path, policy: RetryPolicy = POLICY):
    """fetch_to_file, while another thread records the largest temp file seen in dest's folder."""
    largest, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            for p in dest.parent.glob(f".{dest.name}.*{TEMP_SUFFIX}"):
                try:
                    largest[0] = max(largest[0], p.stat().st_size)
                except OSError:
                    pass
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        started = time.monotonic()
        with pytest.raises(FetchError) as caught:
            fetch_to_file(url, dest, policy=policy)
        return caught.value, time.monotonic() - started, largest[0]
    finally:
        done.set()
        watcher.join()


def _no_leftovers(dest: Path) -> None:
    assert not dest.exists()
    assert list(dest.parent.glob(TEMP_GLOB)) == []


def test_endless_body_stops_at_the_cap_and_the_partial_file_is_removed(server, tmp_path):
    server.route("/endless", endless())
    dest = tmp_path / "raw" / "archive.tar.gz"
    error, seconds, largest = _fetch_watching_size(server.url + "/endless", dest)
    assert isinstance(error, LimitExceeded) and "4 MiB limit" in str(error)
    assert 0 < largest <= 4 * MiB  # it grew, but never past the cap
    assert len(server.requests) == 1  # not retried
    _no_leftovers(dest)


def test_gzip_content_encoding_is_decoded_under_the_same_cap(server, tmp_path):
    bomb = gzip_bomb(64 * MiB)
    assert len(bomb) < 200_000
    server.route("/bomb", encoded(bomb, "gzip"))
    dest = tmp_path / "raw" / "offer.json"
    error, _, largest = _fetch_watching_size(server.url + "/bomb", dest)
    assert isinstance(error, LimitExceeded) and "decoded body" in str(error)
    assert largest <= 4 * MiB
    _no_leftovers(dest)


def test_a_small_gzip_body_is_decoded(server, tmp_path):
    server.route("/small", encoded(gzip_bomb(2 * MiB), "gzip"))
    result = fetch_to_file(server.url + "/small", tmp_path / "small.bin", policy=POLICY)
    assert result.size == 2 * MiB and (tmp_path / "small.bin").read_bytes() == b"\0" * (2 * MiB)


def test_unknown_content_encoding_is_refused(server, tmp_path):
    server.route("/br", encoded(b"\x1b\x00\x00", "br"))
    dest = tmp_path / "x.json"
    error, _, _ = _fetch_watching_size(server.url + "/br", dest)
    assert "Content-Encoding 'br' is not supported" in str(error)
    _no_leftovers(dest)


def test_content_length_over_the_cap_is_refused_before_reading(server, tmp_path):
    server.route("/huge", huge_length())
    dest = tmp_path / "x.bin"
    error, seconds, largest = _fetch_watching_size(server.url + "/huge", dest)
    assert isinstance(error, LimitExceeded) and "Content-Length 10737418240" in str(error)
    assert largest == 0 and seconds < 5
    _no_leftovers(dest)


def test_a_dripping_server_is_abandoned_after_the_rate_window_and_not_retried(server, tmp_path):
    server.route("/drip", drip(interval=0.2))
    dest = tmp_path / "x.bin"
    error, seconds, _ = _fetch_watching_size(server.url + "/drip", dest)
    assert isinstance(error, LimitExceeded) and "slower than 1000 bytes/s" in str(error)
    assert seconds < 6  # a 2 s window (60 s by default)
    assert len(server.requests) == 1
    _no_leftovers(dest)


def test_content_length_larger_than_the_body_on_an_open_connection_fails_fast(server, tmp_path):
    server.route("/short", short_and_hang())
    dest = tmp_path / "x.bin"
    error, seconds, _ = _fetch_watching_size(server.url + "/short", dest)
    assert isinstance(error, LimitExceeded)  # a silent connection is slower than any minimum rate
    assert seconds < 8 and len(server.requests) == 1
    _no_leftovers(dest)


def test_the_overall_deadline_ends_a_transfer_that_is_fast_enough_but_endless(server, tmp_path):
    server.route("/steady", steady(rate=50_000, total=32 * MiB))
    dest = tmp_path / "x.bin"
    policy = RetryPolicy(max_attempts=3, backoff_seconds=0.01, timeout=(2.0, 10.0), max_bytes=64 * MiB,
                         min_rate_bytes=1000, min_rate_seconds=2.0, deadline_seconds=3.0)
    error, seconds, _ = _fetch_watching_size(server.url + "/steady", dest, policy)
    assert isinstance(error, LimitExceeded) and "deadline of 3 s" in str(error)
    assert 2.5 < seconds < 6
    _no_leftovers(dest)


def test_limits_come_from_the_environment(server, tmp_path, monkeypatch, settings_from_env):
    monkeypatch.setenv("MLPERF_MAX_RESPONSE_BYTES", str(MiB))
    settings_from_env()
    server.route("/endless", endless())
    dest = tmp_path / "x.bin"
    error, _, largest = _fetch_watching_size(server.url + "/endless", dest, RetryPolicy(max_attempts=1))
    assert "1 MiB limit" in str(error) and largest <= MiB


def test_local_mirror_files_are_capped_too(tmp_path):
    big = tmp_path / "mirror.tar.gz"
    big.write_bytes(b"\0" * (5 * MiB))
    dest = tmp_path / "raw" / "copy.tar.gz"
    error, _, _ = _fetch_watching_size(str(big), dest)
    assert isinstance(error, LimitExceeded)
    _no_leftovers(dest)


def test_get_json_refuses_deep_nesting_with_one_line(server):
    server.route("/deep.json", fixed(deep_json()))
    with pytest.raises(FetchError, match="nested deeper than 256"):
        get_json(server.url + "/deep.json", policy=POLICY)


def test_get_json_is_capped(server):
    server.route("/big.json", endless())
    with pytest.raises(LimitExceeded):
        get_json(server.url + "/big.json", policy=POLICY)


@pytest.mark.parametrize("link", ["file:///etc/passwd", "http://evil.example/offer.json", "ftp://127.0.0.1/x",
                                  "//evil.example/offer.json", "gopher://127.0.0.1:1/"])
def test_links_found_upstream_must_be_http_on_the_configured_host(link):
    with pytest.raises(UnsafeURL):
        check_followed_url(link, "http://127.0.0.1:8080/api", "test link")


def test_relative_links_and_allowed_mirror_hosts_are_followed(monkeypatch, settings_from_env):
    assert check_followed_url("/offers/x.json", "https://pricing.example", "t") == "https://pricing.example/offers/x.json"
    with pytest.raises(UnsafeURL, match="MLPERF_ALLOWED_HOSTS"):
        check_followed_url("https://mirror.example/x", "https://pricing.example", "t")
    monkeypatch.setenv("MLPERF_ALLOWED_HOSTS", "mirror.example, other.example")
    settings_from_env()
    assert check_followed_url("https://mirror.example/x", "https://pricing.example", "t") == "https://mirror.example/x"


def test_a_local_source_follows_only_relative_links_inside_it(tmp_path):
    (tmp_path / "offers").mkdir()
    assert check_followed_url("offers/x.json", str(tmp_path), "t") == str(tmp_path / "offers" / "x.json")
    for link in ("/etc/passwd", "../outside.json", "file:///etc/passwd"):
        with pytest.raises(UnsafeURL):
            check_followed_url(link, str(tmp_path), "t")


def test_aws_region_index_pointing_at_a_local_file_copies_nothing(server, tmp_path):
    import json

    from pipelines.lib.prices.fetch import (
        AWS_REGION_INDEX_PATH,
        PriceFetchError,
        fetch_aws,
    )

    for target in ("file:///etc/passwd", "http://evil.example/offer.json", "ftp://127.0.0.1/offer.json"):
        index = {"regions": {"us-east-1": {"currentVersionUrl": target}}}
        server.route(AWS_REGION_INDEX_PATH, fixed(json.dumps(index).encode()))
        with pytest.raises((PriceFetchError, UnsafeURL)) as caught:
            fetch_aws(server.url, tmp_path / "raw", POLICY, day="2026-11-30")
        assert "refusing" in str(caught.value)
        assert not list((tmp_path / "raw" / "aws").rglob("offer_*")), target
    assert [path for path, _ in server.requests] == [AWS_REGION_INDEX_PATH] * 3  # only the index was fetched


def test_azure_next_page_link_to_another_host_is_refused(server, tmp_path):
    import json

    from pipelines.lib.prices.fetch import AZURE_PATH, PriceFetchError, fetch_azure

    page = {"Items": [], "NextPageLink": "http://evil.example/api/retail/prices?$skip=100"}
    server.route(AZURE_PATH, fixed(json.dumps(page).encode()))
    with pytest.raises((PriceFetchError, UnsafeURL), match="refusing 'http://evil.example"):
        fetch_azure(server.url, tmp_path / "raw", POLICY, day="2026-11-30")
    assert len(server.requests) == 1
