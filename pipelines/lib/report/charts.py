"""The report's charts: Vega-Lite specs built as plain data (scaling and cost), labels placed so that none
overlap, and their rendering by vl-convert (no browser, no network): SVG for the pages, PNG for files.
"""

from __future__ import annotations

import math

from pipelines.lib.io.jsonsafe import dumps_strict
from pipelines.lib.report.figures import cloud_name, count_text, family_of, money

CHARTS = {
    "weak_scaling": "Relative throughput vs cluster size (weak scaling)",
    "convergence_scaling": "Speedup vs cluster size (convergence scaling)",
    "cost_to_train": "Cost to train at the cheapest bookable list price",
}

def _text_width(text: str, font_size: float) -> float:
    return len(text) * font_size * 0.62 + 2


def place_labels(points: list[tuple[float, float, str]], obstacles: list[tuple[float, float]],
                 width: float, height: float, font_size: float = 11) -> list[tuple[float, float, str] | None]:
    """Greedy label placement in pixels: for each (x, y, text) try positions around the point and keep
    the first whose box overlaps no placed label and no marker; None when every position collides.
    Returns the left-middle anchor of each label."""
    placed: list[tuple[float, float, float, float]] = []
    out: list[tuple[float, float, str] | None] = []
    marker = 4.5
    h = font_size + 2
    for x, y, text in points:
        w = _text_width(text, font_size)
        candidates = []
        for ring in (1, 2, 3):
            gap = 5 + (ring - 1) * 11
            # below-right first: the dashed linear line runs above the measured one
            candidates += [(x + gap, y + gap + h / 2), (x + gap, y - gap - h / 2), (x - gap - w, y + gap + h / 2),
                           (x - gap - w, y - gap - h / 2), (x + gap + 2, y), (x - gap - w - 2, y),
                           (x - w / 2, y - gap - h), (x - w / 2, y + gap + h)]
        chosen = None
        for lx, ly in candidates:
            box = (lx, ly - h / 2, lx + w, ly + h / 2)
            if box[0] < 0 or box[2] > width or box[1] < 0 or box[3] > height:
                continue
            if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                continue
            if any(box[0] - marker < ox < box[2] + marker and box[1] - marker < oy < box[3] + marker
                   for ox, oy in obstacles):
                continue
            chosen = (lx, ly, box)
            break
        if chosen is None:
            out.append(None)
            continue
        placed.append(chosen[2])
        out.append((chosen[0], chosen[1], text))
    return out


def _log_pos(v: float, lo: float, hi: float, length: float) -> float:
    return (math.log2(v) - math.log2(lo)) / (math.log2(hi) - math.log2(lo)) * length


VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"


def _field(name: str, kind: str = "nominal", **more) -> dict:
    return {"field": name, "type": kind} | more


def _family_color(families: list[str], colors: dict[str, str], legend: dict | None) -> dict:
    return _field("family", title="submitter · accelerator", legend=legend,
                  scale={"domain": families, "range": [colors[f] for f in families]})


def scaling_chart(rows: list[dict], measure: str, title: str, y_title: str, colors: dict[str, str],
                  acc_names: dict[str, str], boxes: list | None = None) -> dict | None:
    """Measured against linear scaling, one line per scaling family, log-log; efficiency labels placed in
    pixels so that none overlap (their boxes appended to `boxes`). A Vega-Lite spec (a dict), or None."""
    width, height = 640, 380
    values = []
    for r in rows:
        if r.get(measure) is None or not r.get("size_ratio"):
            continue
        eff_key = "throughput_scaling_efficiency" if measure == "relative_throughput" else "convergence_scaling_efficiency"
        # one line per scaling family (division and, when the mart has it, framework family); one
        # colour per submitter · accelerator
        line = f"{family_of(r, acc_names)} {r['division']} {r.get('framework_family') or ''}"
        common = {"family": family_of(r, acc_names), "line": line,
                  "accelerators": r["accelerator_count"], "system": r.get("system_name") or r["system"],
                  "base_system": r["base_system"], "is_base": bool(r["is_base"])}
        values.append(common | {"series": "measured", "value": r[measure], "efficiency": r[eff_key]})
        values.append(common | {"series": "ideal (linear)", "value": r["size_ratio"], "efficiency": 1.0})
    if not values:
        return None
    xs = [v["accelerators"] for v in values]
    ys = [v["value"] for v in values]
    x_lo, x_hi = min(xs) / 1.25, max(xs) * 1.25
    y_lo, y_hi = min(min(ys), 1.0) / 1.2, max(ys) * 1.35
    families = sorted({v["family"] for v in values})
    encoding = {
        "x": _field("accelerators", "quantitative", title="accelerators (log scale)",
                    scale={"type": "log", "base": 2, "domain": [x_lo, x_hi], "nice": False},
                    axis={"values": sorted(set(xs)), "format": ",d", "labelAngle": -45, "labelOverlap": "greedy"}),
        "y": _field("value", "quantitative", title=y_title,
                    scale={"type": "log", "base": 2, "domain": [y_lo, y_hi], "nice": False},
                    axis={"labelOverlap": "greedy"}),
        "color": _family_color(families, colors, {"labelLimit": 320, "orient": "right"}),
        "strokeDash": _field("series", sort=["measured", "ideal (linear)"], legend=None),
        "detail": _field("line"),
        "tooltip": [_field("family"), _field("system"), _field("base_system"), _field("accelerators", "quantitative"),
                    _field("value", "quantitative", format=".3f"), _field("efficiency", "quantitative", format=".1%")],
    }
    layers = [{"mark": {"type": "line", "strokeWidth": 2}, "encoding": encoding},
              {"transform": [{"filter": "datum.series == 'measured'"}],
               "mark": {"type": "point", "filled": True, "size": 40, "opacity": 1}, "encoding": encoding}]
    # efficiency labels on measured non-base points, placed in pixels so that none overlap
    points, obstacles = [], []
    for v in values:
        px, py = _log_pos(v["accelerators"], x_lo, x_hi, width), height - _log_pos(v["value"], y_lo, y_hi, height)
        if v["series"] == "measured":
            obstacles.append((px, py))
            if not v["is_base"]:
                points.append((px, py, f"{v['efficiency']:.0%}", v["family"]))
    placed = place_labels([(px, py, t) for px, py, t, _ in points], obstacles, width, height)
    labels = []
    for spot, (_, _, text, fam) in zip(placed, points, strict=False):
        if spot is not None:
            labels.append({"px": spot[0], "py": spot[1], "text": text, "family": fam})
            if boxes is not None:
                w = _text_width(text, 11)
                boxes.append((spot[0], spot[1] - 6.5, spot[0] + w, spot[1] + 6.5))
    if labels:
        at = {"x": _field("px", "quantitative", scale=None), "y": _field("py", "quantitative", scale=None),
              "text": _field("text")}
        text_mark = {"type": "text", "align": "left", "baseline": "middle", "fontSize": 11, "fontWeight": "bold"}
        # a white halo first, so that lines crossing a label do not hide it
        layers.append({"data": {"values": labels}, "encoding": at,
                       "mark": text_mark | {"stroke": "white", "strokeWidth": 3, "strokeJoin": "round"}})
        layers.append({"data": {"values": labels}, "mark": text_mark,
                       "encoding": at | {"color": _family_color(families, colors, None) | {"title": None}}})
    return {"$schema": VEGA_LITE_SCHEMA, "data": {"values": values}, "layer": layers,
            "title": {"text": title, "subtitle": "relative to each family's smallest system; labels: scaling efficiency "
                      "(share of linear); dashed: linear scaling"},
            "width": width, "height": height}


def cost_chart(rows: list[dict], unpriced: list[dict], title: str, colors: dict[str, str],
               acc_names: dict[str, str], names: dict[tuple[str, str], str]) -> dict | None:
    """Bars grouped per system (cheapest system first), the clouds side by side within a group
    (cheapest first), coloured by family; each bar says its cloud and cost, the submitter's own
    cloud is marked; a system without a price gets a row that says so. A Vega-Lite spec, or None."""
    if not rows:  # a chart of "no price" rows only says less than the table of unpriced systems
        return None
    groups: dict[str, list[dict]] = {}
    for r in rows:
        key = (r["submitter"], r["system"])
        label = (f"{names.get(key, r['system'])} · {count_text(r['accelerator_count'])}× "
                 f"{acc_names.get(r['accelerator'], r['accelerator'])}")
        groups.setdefault(label, []).append(r)
    order = sorted(groups, key=lambda g: (min(r["cost_to_train_usd"] for r in groups[g]), g))
    values, heads, shading = [], [], []
    row_ids: list[str] = []
    for gi, label in enumerate(order):
        for ci, r in enumerate(sorted(groups[label], key=lambda r: (r["cost_to_train_usd"], cloud_name(r["provider"])))):
            row = f"{gi:03d}.{ci}"
            row_ids.append(row)
            native = bool(r["is_native_cloud"])
            values.append({
                "row": row, "label": label, "family": family_of(r, acc_names), "cloud": cloud_name(r["provider"]),
                "cost": r["cost_to_train_usd"], "region": r["region"], "sku": r["sku"],
                "price": r["price_per_accelerator_hour_usd"], "minutes": r["score_minutes"], "native": native,
                "text": f"{cloud_name(r['provider'])} {money(r['cost_to_train_usd'])}" + ("  ★ own cloud" if native else ""),
            })
            if ci == 0:
                heads.append({"row": row, "label": label})
            if gi % 2 == 0:
                shading.append({"row": row})
    missing = []
    listed = set(order)
    for r in unpriced:
        key = (r["submitter"], r["system"])
        label = (f"{names.get(key, r['system'])} · {count_text(r['accelerator_count'])}× "
                 f"{acc_names.get(r['accelerator'], r['accelerator'] or '?')}")
        if label in listed:
            continue
        listed.add(label)
        row = f"{len(order) + len(missing):03d}.0"
        row_ids.append(row)
        missing.append({"row": row, "text": f"no price listed: {r['reason']}"})
        heads.append({"row": row, "label": label})
        if (len(order) + len(missing) - 1) % 2 == 0:
            shading.append({"row": row})
    families = sorted({v["family"] for v in values})
    max_cost = max((v["cost"] for v in values), default=1.0)
    width, step = 520, 17
    y = _field("row", "ordinal", title=None, sort=row_ids, axis=None,
               scale={"domain": row_ids, "paddingInner": 0, "paddingOuter": 0})
    x = _field("cost", "quantitative", title="cost to train (USD, cheapest bookable price)",
               scale={"domain": [0, max_cost * 1.55], "nice": False}, axis={"format": "$,.0f"})
    layers = []
    if shading:
        layers.append({"data": {"values": shading}, "mark": {"type": "rect", "color": "#f2f4f7"},
                       "encoding": {"y": y, "x": {"value": 0}, "x2": {"value": width}}})
    if values:
        layers.append({"data": {"values": values}, "mark": {"type": "bar", "height": {"band": 0.72}}, "encoding": {
            "y": y, "x": x, "color": _family_color(families, colors, {"labelLimit": 320, "orient": "right"}),
            "stroke": {"condition": {"test": "datum.native", "value": "#111"}, "value": None},
            "strokeWidth": {"condition": {"test": "datum.native", "value": 1.5}, "value": 0},
            "tooltip": [_field("label"), _field("cloud"), _field("region"), _field("sku"),
                        _field("price", "quantitative", format="$.2f", title="$/accelerator-hour"),
                        _field("minutes", "quantitative", format=".2f"),
                        _field("cost", "quantitative", format="$,.2f")]}})
        layers.append({"data": {"values": values},
                       "mark": {"type": "text", "align": "left", "baseline": "middle", "dx": 4, "fontSize": 10,
                                "color": "#222"},
                       "encoding": {"y": y, "x": x, "text": _field("text")}})
    if missing:
        layers.append({"data": {"values": missing},
                       "mark": {"type": "text", "align": "left", "baseline": "middle", "dx": 4, "fontSize": 10,
                                "fontStyle": "italic", "color": "#8a5300"},
                       "encoding": {"y": y, "x": {"value": 0}, "text": _field("text")}})
    # system names left of the plot, on the first bar of each group
    layers.append({"data": {"values": heads},
                   "mark": {"type": "text", "align": "right", "baseline": "middle", "dx": -6, "fontSize": 11,
                            "color": "#222"},
                   "encoding": {"y": y, "x": {"value": 0}, "text": _field("label")}})
    return {"$schema": VEGA_LITE_SCHEMA, "layer": layers,
            "title": {"text": title, "subtitle": "per system, one bar per cloud at its cheapest bookable "
                      "$/accelerator-hour; ★ and outline: the submitter's own cloud"},
            "width": width, "height": max(len(row_ids) * step, 60)}


def chart_spec(chart: dict) -> str:
    """The Vega-Lite JSON of a chart (vl-convert and the browser both refuse a spec that is not valid; the
    tests render every chart)."""
    return dumps_strict(chart, indent=1, ensure_ascii=False)


def render_svg(spec: str) -> str:
    import vl_convert as vlc

    return vlc.vegalite_to_svg(spec)


def svg_to_png(svg: str) -> bytes:
    """The PNG of a chart rendered by render_svg, at twice its size: the same bytes as rendering the spec to
    PNG (vl-convert rasterizes the SVG it renders), without compiling the spec a second time."""
    import vl_convert as vlc

    return vlc.svg_to_png(svg, scale=2)


