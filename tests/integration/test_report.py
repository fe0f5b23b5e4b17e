"""The report rendered from a small hand-made warehouse file: PNGs valid, HTML self-contained (charts as
embedded SVG images), untrusted names escaped by the templates."""

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

from pipelines.lib.report.round_report import (
    build_report,
    default_benchmark,
    latest_round,
)
from support.marts import (
    fixture_database,  # the same hand-made upstream tables as the mart tests
)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

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
    return fixture_database(tmp_path_factory.mktemp("wh") / "mlperf.duckdb")


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


def test_each_png_is_its_spec_rendered_to_png(report):
    """The PNG is rasterized from the chart's SVG: byte for byte what vl-convert makes of the spec itself."""
    import vl_convert as vlc

    for name, path in report.pngs.items():
        spec = (report.out_dir / f"{name}.vl.json").read_text()
        assert path.read_bytes() == vlc.vegalite_to_png(spec, scale=2), name


def test_html_is_self_contained_and_embeds_the_charts(report):
    text = report.html.read_text(encoding="utf-8")
    parser = _Resources()
    parser.feed(text)
    assert parser.external == []  # nothing to fetch when opened offline
    assert len(parser.images) == 3
    prefix = "data:image/svg+xml;base64,"
    embedded = [base64.b64decode(src[len(prefix):]).decode() for src in parser.images if src.startswith(prefix)]
    assert sorted(embedded) == sorted(report.svgs.values()) and all(svg.startswith("<svg") for svg in embedded)
    assert set(report.svgs) == set(report.pngs)  # the same charts as files
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


# --- what a buyer reads: colours, labels, names, prices, findings ------------------------------

def _lab(hex_colour: str) -> tuple[float, float, float]:
    """sRGB hex -> CIELAB (D65), to judge whether two colours look different."""
    def linear(c):
        return ((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92
    r, g, b = (linear(int(hex_colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    x = (r * 0.4124 + g * 0.3576 + b * 0.1805) / 0.95047
    y = r * 0.2126 + g * 0.7152 + b * 0.0722
    z = (r * 0.0193 + g * 0.1192 + b * 0.9505) / 1.08883
    f = lambda v: v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116  # noqa: E731
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_palette_stays_distinct_for_20_families():
    import itertools
    import math

    from pipelines.lib.report.figures import assign_colors

    families = [f"Submitter{i} · accelerator{i}" for i in range(20)]
    colours = assign_colors(families)
    assert len(set(colours.values())) == 20
    closest = min(math.dist(_lab(a), _lab(b)) for a, b in itertools.combinations(colours.values(), 2))
    assert closest >= 20, f"two family colours only ΔE {closest:.1f} apart"
    # the assignment does not depend on the order families are met in
    assert assign_colors(list(reversed(families))) == colours


def _colour_scales(spec) -> list[dict[str, str]]:
    """Every colour scale (domain -> range) in a Vega-Lite spec, from any layer."""
    found = []
    if isinstance(spec, dict):
        enc = spec.get("encoding") or {}
        scale = (enc.get("color") or {}).get("scale") if isinstance(enc.get("color"), dict) else None
        if scale and "domain" in scale:
            found.append(dict(zip(scale["domain"], scale["range"], strict=False)))
        for v in spec.values():
            found += _colour_scales(v)
    elif isinstance(spec, list):
        for v in spec:
            found += _colour_scales(v)
    return found


def test_one_colour_per_family_in_every_chart(report):
    import json

    seen: dict[str, set[str]] = {}
    for name in report.pngs:
        spec = json.loads((report.out_dir / f"{name}.vl.json").read_text())
        scales = _colour_scales(spec)
        assert scales, f"{name}: colour is not pinned to the family palette"
        for scale in scales:
            for family, colour in scale.items():
                seen.setdefault(family, set()).add(colour)
    assert seen and all(len(c) == 1 for c in seen.values()), seen
    assert {f: next(iter(c)) for f, c in seen.items()} == {f: report.colors[f] for f in seen}
    # families are submitter · accelerator, coloured alike in the scaling and the cost charts
    assert "NVIDIA · nvidia-h100-sxm-80gb" in seen and "Google · google-tpu-trillium" in seen


def test_scaling_labels_do_not_overlap(report):
    for name in ("weak_scaling", "convergence_scaling"):
        boxes = report.label_boxes[name]
        assert len(boxes) >= 4  # every non-base point of the fixture gets its label
        for i, a in enumerate(boxes):
            assert 0 <= a[0] and a[2] <= 640 and 0 <= a[1] and a[3] <= 380
            for b in boxes[i + 1:]:
                assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (name, a, b)


def test_place_labels_moves_colliding_labels_apart():
    from pipelines.lib.report.charts import place_labels

    # three points almost on top of each other: three labels, none overlapping, or dropped
    placed = place_labels([(100, 100, "98%"), (102, 101, "99%"), (104, 99, "97%")], [(100, 100), (102, 101)], 640, 380)
    boxes = [(x, y - 6.5, x + 25, y + 6.5) for x, y, _ in filter(None, placed)]
    assert len(boxes) == 3
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])


def test_display_names_cents_findings_and_unpriced(report, warehouse, tmp_path):
    text = report.html.read_text(encoding="utf-8")
    # dim_system.system_name is what a reader sees; the folder name is the small print
    assert "TPU TRILLIUM 3072" in text and "$2,304.00" in text and "$12.29" in text
    findings = "\n".join(report.findings)
    # cheapest: 100 min × 512 chips × $2.70 = $2,304.00; the next accelerator model is v5p at
    # 120 min × 512 × $4.20 = $4,300.80: 1.87× the performance per dollar
    assert "Cheapest to train: Google TPU TRILLIUM 512" in findings and "$2,304.00 on Google Cloud" in findings
    assert "1.87× cheaper than google-tpu-v5p (512 accelerators)" in findings
    assert "Best throughput scaling: NVIDIA · nvidia-h100-sxm-80gb keeps 9" in findings
    assert "Best convergence scaling" in findings
    assert text.index('id="findings"') < text.index("<img")  # the findings come first
    # a scored result without a price is listed with the reason, not dropped
    with duckdb.connect(str(warehouse), read_only=True) as con:
        resnet = build_report(con, "v4.1", "resnet", tmp_path / "resnet")
    assert [(r["system"], r["reason"]) for r in resnet.unpriced] == [
        ("acme-x", "accelerator 'Acme X1' not mapped to a priced model")]
    resnet_html = resnet.html.read_text(encoding="utf-8")
    assert "Systems without a price" in resnet_html and "ACME X" in resnet_html
    # no priced system: no cost chart, and a note that says where to look
    assert "cost_to_train" not in resnet.pngs
    assert any("no bookable price" in n for n in resnet.notes)


def test_clouds_are_named_for_people():
    from pipelines.lib.report.figures import cloud_name

    assert cloud_name("gcp") == "Google Cloud" and cloud_name("oci") == "Oracle Cloud"
    assert cloud_name("lambda") == "lambda"


def test_report_reads_marts_without_optional_columns(tmp_path):
    """Marts missing optional columns (or gaining new ones) still render: columns are read by name."""
    con = duckdb.connect(str(fixture_database(tmp_path / "wh.duckdb")))
    con.execute("alter table mart_scaling_efficiency drop column family_size")
    con.execute("alter table mart_cost_to_train add column if not exists price_source varchar default 'list'")
    con.execute("drop table mart_utilization")
    rep = build_report(con, "v4.1", "gpt3", tmp_path / "out")
    con.close()
    assert len(rep.figures) == 9 and all(r["mfu"] is None for r in rep.figures)
    assert "price source" in rep.html.read_text(encoding="utf-8")


def test_framework_families_are_separate_lines(tmp_path):
    """With the mart's `framework_family` (when present), two frameworks of one submitter and
    accelerator are two lines of one colour, and findings judge each family on its own."""
    import json

    con = duckdb.connect(str(fixture_database(tmp_path / "wh.duckdb")))
    con.execute("alter table mart_scaling_efficiency add column if not exists framework_family varchar")
    con.execute("update mart_scaling_efficiency set framework_family = 'jax'")
    con.execute("alter table mart_scaling_efficiency add column if not exists is_scaling_pair boolean")
    con.execute("update mart_scaling_efficiency set framework_family = 'pytorch' where system = 'tpu-trillium-3072'")
    con.execute("update mart_scaling_efficiency set is_scaling_pair = accelerator_count <> base_accelerator_count")
    rep = build_report(con, "v4.1", "gpt3", tmp_path / "out")
    con.close()
    spec = json.loads((rep.out_dir / "weak_scaling.vl.json").read_text())
    datas = [spec.get("data") or {}] + [layer.get("data") or {} for layer in spec["layer"]]
    lines = {v["line"] for data in datas for v in data.get("values", []) if "line" in v}
    assert {line for line in lines if line.startswith("Google · google-tpu-trillium")} == {
        "Google · google-tpu-trillium closed jax", "Google · google-tpu-trillium closed pytorch"}
    assert len({rep.colors[f] for f in rep.colors if f.startswith("Google · google-tpu-trillium")}) == 1
