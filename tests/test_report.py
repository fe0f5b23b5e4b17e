"""The report rendered from a small hand-made warehouse file: PNGs valid, HTML self-contained."""

from __future__ import annotations

import base64
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.report import build_report, default_benchmark, latest_round
from test_marts import build_fixture  # the same hand-made upstream tables as the mart tests

CHROMIUM = Path("/usr/bin/chromium")


def png_size(data: bytes) -> tuple[int, int]:
    """Walk the PNG chunks, checking every CRC; return (width, height)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    assert any(k == b"IDAT" for k, _ in chunks)
    zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))  # the image data inflates
    return struct.unpack(">II", chunks[0][1][:8])


class _Resources(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.external, self.tables = [], [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "table":
            self.tables += 1
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            if value and not value.startswith(("data:", "#")):
                self.external.append((tag, value))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wh") / "mlperf.duckdb"
    con = duckdb.connect(str(path))
    build_fixture(con)
    con.close()
    return path


@pytest.fixture(scope="module")
def report(warehouse, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "v4.1"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return build_report(con, "v4.1", "gpt3", out)


def test_pngs_exist_and_are_valid(report):
    assert set(report.pngs) == {"weak_scaling", "convergence_scaling", "cost_to_train"}
    for path in report.pngs.values():
        width, height = png_size(path.read_bytes())
        assert width >= 400 and height >= 200


def test_html_is_self_contained_and_embeds_the_pngs(report):
    text = report.html.read_text(encoding="utf-8")
    parser = _Resources()
    parser.feed(text)
    assert parser.external == []  # nothing to fetch when opened offline
    assert len(parser.images) == 3
    embedded = {base64.b64decode(src.split(",", 1)[1]) for src in parser.images if src.startswith("data:image/png;base64,")}
    assert embedded == {p.read_bytes() for p in report.pngs.values()}
    assert parser.tables >= 2  # the figures and the price options
    # the figures table carries the hand-checked numbers: 100/27/4 = 92.6%, $2,304 for 512 Trillium chips
    assert "92.6%" in text and "$2,304" in text and "tpu-trillium-3072" in text


def test_figures_and_filters(warehouse, tmp_path):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert latest_round(con) == "v4.1"
        assert default_benchmark(con, "v4.1") == "gpt3"
        only_tpu = build_report(con, "v4.1", "gpt3", tmp_path / "tpu", accelerators=["trillium"])
        none = build_report(con, "v4.1", "bert", tmp_path / "none")
    assert {r["accelerator"] for r in only_tpu.figures} == {"google-tpu-trillium"}
    assert len(only_tpu.figures) == 4 and len(only_tpu.pngs) == 3
    # no data: no charts, but a page that says so
    assert none.pngs == {} and none.figures == [] and none.html.exists()
    assert "No scored results" in none.html.read_text()


def test_html_renders_headless(report, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed: headless rendering not checked (no browser in this environment)")
    shot = tmp_path / "screenshot.png"
    subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1280,2400", f"--screenshot={shot}", report.html.as_uri()],
        check=True, timeout=120, capture_output=True,
    )
    width, height = png_size(shot.read_bytes())
    assert (width, height) == (1280, 2400)
    # a page with charts is far from blank: the screenshot compresses much worse than a white page
    assert shot.stat().st_size > 50_000
    dom = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", report.html.as_uri()],
        check=True, timeout=120, capture_output=True, text=True,
    ).stdout
    assert dom.count("<img") == 3
    shutil.copy(shot, report.out_dir / "screenshot.png")
