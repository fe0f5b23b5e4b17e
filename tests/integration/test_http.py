"""pipelines.lib.io.http against a real HTTP server on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from pipelines.lib.io.files import TEMP_GLOB
from pipelines.lib.io.http import fetch_to_file, get_json
from pipelines.lib.io.retry import FetchError, RetryPolicy, make_session, retry_after_seconds
from pipelines.lib.io.sidecars import recorded_sha256

try:  # tests/ is a rootdir-less directory today; keep working if it becomes a package
    from support.http_server import Drop, LoopbackServer, Reply, Slow, Status, Truncate
except ImportError:  # pragma: no cover
    from tests.support.http_server import (
        Drop,
        LoopbackServer,
        Reply,
        Slow,
        Status,
        Truncate,
    )

FAST = RetryPolicy(max_attempts=4, backoff_seconds=0.01, max_backoff_seconds=2.0, timeout=(2.0, 5.0))
BODY = b"benchmark,accuracy\n" + b"resnet,0.759\n" * 5000  # ~65 kB: several reads on the wire


@pytest.fixture
def site(tmp_path: Path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "results.csv").write_bytes(BODY)
    with LoopbackServer(root) as server:
        yield server


@pytest.fixture
def out(tmp_path: Path) -> Path:
    d = tmp_path / "raw"
    d.mkdir()
    return d


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob(TEMP_GLOB))


def test_download_writes_file_sha_and_sidecar(site, out):
    dest = out / "results.csv"
    result = fetch_to_file(site.url + "/results.csv", dest, policy=FAST)

    assert result.changed and result.path == dest
    assert dest.read_bytes() == BODY
    assert result.sha256 == hashlib.sha256(BODY).hexdigest() and result.size == len(BODY)
    assert result.etag and result.etag.startswith('"') and result.last_modified
    meta = json.loads((out / "results.csv.meta.json").read_text())
    assert meta["url"] == site.url + "/results.csv"
    assert (meta["sha256"], meta["size"], meta["etag"]) == (result.sha256, result.size, result.etag)
    assert meta["last_modified"] == result.last_modified and meta["fetched_at"]
    assert site.requests[0][2]["user-agent"] == "mlperf-warehouse"
    assert leftovers(out) == []
    assert recorded_sha256(dest) == result.sha256
    dest.write_bytes(BODY + b"changed behind our back")
    assert recorded_sha256(dest) is None


def test_second_fetch_is_conditional_and_unchanged(site, out):
    dest = out / "results.csv"
    first = fetch_to_file(site.url + "/results.csv", dest, policy=FAST)
    stat_before = dest.stat()

    second = fetch_to_file(site.url + "/results.csv", dest, policy=FAST)

    assert not second.changed
    assert (second.sha256, second.size, second.etag) == (first.sha256, first.size, first.etag)
    method, _, headers = site.requests[-1]
    assert headers["if-none-match"] == first.etag and headers["if-modified-since"] == first.last_modified
    assert len(site.requests) == 2
    after = dest.stat()
    assert (after.st_ino, after.st_mtime_ns) == (stat_before.st_ino, stat_before.st_mtime_ns)

    # conditional=False downloads again; same bytes still means changed=False.
    third = fetch_to_file(site.url + "/results.csv", dest, policy=FAST, conditional=False)
    assert not third.changed and "if-none-match" not in site.requests[-1][2]


def test_new_content_is_changed(site, out):
    dest = out / "results.csv"
    fetch_to_file(site.url + "/results.csv", dest, policy=FAST)
    (site.root / "results.csv").write_bytes(BODY + b"bert,0.72\n")
    result = fetch_to_file(site.url + "/results.csv", dest, policy=FAST)
    assert result.changed and dest.read_bytes().endswith(b"bert,0.72\n")


def test_429_honours_retry_after(site, out):
    site.script("/results.csv", [Status(429, retry_after="1")])
    start = time.monotonic()
    result = fetch_to_file(site.url + "/results.csv", out / "r.csv", policy=FAST)
    elapsed = time.monotonic() - start
    assert result.changed and (out / "r.csv").read_bytes() == BODY
    assert 0.9 <= elapsed < 2.5
    assert len(site.requests) == 2


def test_retry_after_is_capped_by_max_backoff(site, out):
    site.script("/results.csv", [Status(503, retry_after="30")])
    policy = RetryPolicy(max_attempts=2, backoff_seconds=0.01, max_backoff_seconds=0.2)
    start = time.monotonic()
    fetch_to_file(site.url + "/results.csv", out / "r.csv", policy=policy)
    assert time.monotonic() - start < 1.5


def test_retry_after_http_date():
    assert retry_after_seconds("120") == 120
    later = retry_after_seconds(time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60)))
    assert later is not None and 55 < later <= 61
    assert retry_after_seconds("soon") is None


def test_500s_until_out_of_attempts_leave_dest_alone(site, out):
    dest = out / "results.csv"
    dest.write_bytes(b"previous good copy")
    site.script("/results.csv", [Status(500)] * 10)

    with pytest.raises(FetchError) as info:
        fetch_to_file(site.url + "/results.csv", dest, policy=FAST)

    message = str(info.value)
    assert "4 attempts" in message and "HTTP 500" in message and "/results.csv" in message
    assert "\n" not in message
    assert len(site.requests) == 4
    assert dest.read_bytes() == b"previous good copy"
    assert leftovers(out) == []


def test_dropped_connection_then_success(site, out):
    site.script("/results.csv", [Drop(), Drop()])
    result = fetch_to_file(site.url + "/results.csv", out / "r.csv", policy=FAST)
    assert result.sha256 == hashlib.sha256(BODY).hexdigest()
    assert len(site.requests) == 3


def test_truncated_body_then_success(site, out):
    site.script("/results.csv", [Truncate(1000)])
    result = fetch_to_file(site.url + "/results.csv", out / "r.csv", policy=FAST)
    assert (out / "r.csv").read_bytes() == BODY and result.size == len(BODY)
    assert len(site.requests) == 2
    assert leftovers(out) == []


def test_truncated_every_time_fails(site, out):
    dest = out / "results.csv"
    dest.write_bytes(b"old")
    site.script("/results.csv", [Truncate(1000)] * 10)
    with pytest.raises(FetchError, match="4 attempts"):
        fetch_to_file(site.url + "/results.csv", dest, policy=FAST)
    assert dest.read_bytes() == b"old" and leftovers(out) == []
    assert not (out / "results.csv.meta.json").exists()


def test_read_timeout_is_retried(site, out):
    site.script("/results.csv", [Slow(0.6)])
    policy = RetryPolicy(max_attempts=3, backoff_seconds=0.01, timeout=(2.0, 0.2))
    result = fetch_to_file(site.url + "/results.csv", out / "r.csv", policy=policy)
    assert result.size == len(BODY) and len(site.requests) == 2


def test_404_fails_at_once(site, out):
    with pytest.raises(FetchError, match="HTTP 404") as info:
        fetch_to_file(site.url + "/missing.csv", out / "m.csv", policy=FAST)
    assert "/missing.csv" in str(info.value)
    assert len(site.requests) == 1
    assert list(out.iterdir()) == []


def test_path_traversal_refused(site, out):
    (site.root.parent / "secret.txt").write_text("no")
    with pytest.raises(FetchError, match="HTTP 40"):
        fetch_to_file(site.url + "/%2e%2e/secret.txt", out / "s.txt", policy=FAST)


def test_file_url_and_plain_path(tmp_path, out):
    src = tmp_path / "mirror" / "prices.json"
    src.parent.mkdir()
    src.write_bytes(b'{"a": 1}')
    dest = out / "prices.json"

    first = fetch_to_file(src.as_uri(), dest)
    assert first.changed and dest.read_bytes() == b'{"a": 1}'
    assert first.sha256 == hashlib.sha256(b'{"a": 1}').hexdigest() and first.last_modified
    assert not fetch_to_file(src.as_uri(), dest).changed

    # A plain path is another source URL: new sidecar entry, same bytes → changed (url differs).
    assert fetch_to_file(str(src), dest).changed
    assert not fetch_to_file(str(src), dest).changed
    src.write_bytes(b'{"a": 2}')
    assert fetch_to_file(str(src), dest).changed and dest.read_bytes() == b'{"a": 2}'
    assert leftovers(out) == []


def test_missing_local_file(tmp_path, out):
    with pytest.raises(FetchError, match="nope.json"):
        fetch_to_file(str(tmp_path / "nope.json"), out / "x.json")
    with pytest.raises(FetchError, match="nope.json"):
        fetch_to_file((tmp_path / "nope.json").as_uri(), out / "x.json")
    assert list(out.iterdir()) == []


def test_get_json_with_pagination_route(site):
    pages = {"1": {"items": [1, 2], "next": 2}, "2": {"items": [3], "next": None}}
    site.route("/api/items", lambda path, query, headers: Reply(200, json.dumps(pages[query["page"]]).encode()))
    site.script("/api/items", [Status(502)])
    session = make_session("tests")

    items, page = [], "1"
    while page:
        data, raw = get_json(site.url + "/api/items", params={"page": page}, policy=FAST, session=session)
        assert json.loads(raw) == data
        items += data["items"]
        page = str(data["next"]) if data["next"] else None
    assert items == [1, 2, 3]
    assert [r[1] for r in site.requests] == ["/api/items?page=1"] * 2 + ["/api/items?page=2"]
    assert site.requests[0][2]["user-agent"] == "tests"


def test_get_json_truncated_body_fails(site):
    site.route("/api/bad", lambda *_: Reply(200, b'{"items": [1, 2'))  # honest length, broken JSON
    with pytest.raises(FetchError, match="invalid JSON"):
        get_json(site.url + "/api/bad", policy=FAST)

    site.route("/api/cut", lambda *_: Reply(200, json.dumps({"items": list(range(100))}).encode()))
    site.script("/api/cut", [Truncate(20)] * 10)  # cut short on the wire, every time
    with pytest.raises(FetchError, match="4 attempts"):
        get_json(site.url + "/api/cut", policy=FAST)
    assert len(site.requests_for("/api/cut")) == 4


def test_head_and_server_conditionals(site):
    import requests

    r = requests.head(site.url + "/results.csv", timeout=5)
    assert r.status_code == 200 and int(r.headers["Content-Length"]) == len(BODY) and r.content == b""
    r2 = requests.get(site.url + "/results.csv", headers={"If-None-Match": r.headers["ETag"]}, timeout=5)
    assert r2.status_code == 304
    r3 = requests.get(site.url + "/results.csv", headers={"If-Modified-Since": r.headers["Last-Modified"]}, timeout=5)
    assert r3.status_code == 304
