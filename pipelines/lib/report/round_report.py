"""The scaling and cost report of one round and benchmark, from a read-only warehouse connection.

Charts are drawn with Altair and rendered to PNG by vl-convert (no browser, no network). The HTML
page embeds the PNGs as base64 `<img>`s and tables of the figures, so it is one self-contained file
that opens offline.

What a reader sees is named for people (`dim_system.system_name`, `dim_accelerator.model`, cloud
names), each (submitter, accelerator) family keeps one colour in every chart, and a findings box at
the top states the headline figures, all computed from the rows below it. Columns are read by name
and only when the table has them, so marts that gain columns (or lack optional ones) still render.
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.lib.io.files import owned_directory, rebased
from pipelines.lib.warehouse.query import fetch_dicts

CHARTS = {
    "weak_scaling": "Relative throughput vs cluster size (weak scaling)",
    "convergence_scaling": "Speedup vs cluster size (convergence scaling)",
    "cost_to_train": "Cost to train at the cheapest bookable list price",
}

# 20 colours of high contrast (Kelly's list without white and black, strongest first, two near-twins
# swapped for navy and teal; every pair at least 25 CIELAB ΔE apart): up to 20 (submitter,
# accelerator) families each get their own colour.
PALETTE = [
    "#0067A5", "#F38400", "#008856", "#BE0032", "#875692", "#882D17", "#E68FAC", "#848482", "#8DB600", "#A1CAF1",
    "#00A5A5", "#000080", "#C2B280", "#B3446C", "#2B3D26", "#E25822", "#654522", "#F99379", "#DCD300", "#5A5A00",
]

CLOUD_NAMES = {"aws": "AWS", "azure": "Azure", "gcp": "Google Cloud", "oci": "Oracle Cloud"}


@dataclass
class Report:
    round: str
    benchmark: str
    out_dir: Path
    html: Path
    pngs: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    figures: list[dict] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    unpriced: list[dict] = field(default_factory=list)
    colors: dict[str, str] = field(default_factory=dict)  # family label -> colour
    label_boxes: dict[str, list[tuple[float, float, float, float]]] = field(default_factory=dict)


# --- reading the warehouse, defensively -------------------------------------------------------

def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    rows = con.execute(
        "select column_name from information_schema.columns where table_name = ?", [table]
    ).fetchall()
    return {c for (c,) in rows}


def select_columns(con, table: str, wanted: Sequence[str], where: str = "", params: Sequence = (),
            order: str = "") -> list[dict]:
    """Rows of `table` with the `wanted` columns it has (the others None); [] if the table is missing.
    Column names come from this module, never from user input; values are bound parameters."""
    have = _columns(con, table)
    if not have:
        return []
    present = [c for c in wanted if c in have]
    sql = f"select {', '.join(present) or '1'} from {table}"
    if where:
        sql += f" where {where}"
    order_by = [c.strip() for c in order.split(",") if c.strip() and c.strip().split(" ")[0] in have]
    if order_by:
        sql += " order by " + ", ".join(order_by)
    return [{c: r.get(c) for c in wanted} for r in fetch_dicts(con, sql, params)]


def _matches(accelerator: str | None, wanted: Sequence[str] | None) -> bool:
    """`--accelerators` entries match an accelerator key exactly or as a case-insensitive substring."""
    if not wanted:
        return True
    acc = (accelerator or "").lower()
    return any(w.strip().lower() and w.strip().lower() in acc for w in wanted)


def _json_safe(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        out.append({k: (v if v is None or isinstance(v, (bool, int, float, str)) else str(v)) for k, v in r.items()})
    return out


def cloud_of(provider: str | None) -> str:
    """The cloud a price row belongs to: `gcp-list` (published list prices) is Google Cloud too."""
    p = (provider or "").lower()
    return p[: -len("-list")] if p.endswith("-list") else p


def cloud_name(provider: str | None) -> str:
    c = cloud_of(provider)
    return CLOUD_NAMES.get(c, c or "?")


def accelerator_names(con) -> dict[str, str]:
    """accelerator key -> the model as people call it ('TPU v6e Trillium'), from dim_accelerator.model."""
    names = {}
    for r in select_columns(con, "dim_accelerator", ["accelerator", "vendor", "model"]):
        model = (r["model"] or "").replace(" (per chip)", "").strip()
        if r["accelerator"]:
            names[r["accelerator"]] = model or r["accelerator"]
    return names


def system_names(con, round_version: str) -> dict[tuple[str, str], dict]:
    """(submitter, system) -> dim_system row of the round (display name and description fields)."""
    wanted = ["submitter", "system", "system_name", "division", "availability", "accelerator_model_name",
              "accelerator", "accelerator_count", "number_of_nodes", "accelerators_per_node"]
    return {(r["submitter"], r["system"]): r for r in select_columns(con, "dim_system", wanted, "round = ?", [round_version])}


def benchmark_name(con, benchmark: str) -> str:
    rows = select_columns(con, "dim_benchmark", ["benchmark", "model"], "benchmark = ?", [benchmark])
    model = rows[0]["model"] if rows else None
    # 'GPT-3 175B' -> 'GPT-3'; 'Llama 3.1 405B' stays whole (the size is part of the name)
    if model and model.startswith("GPT-3"):
        return "GPT-3"
    return model or benchmark


# --- display names and colours ----------------------------------------------------------------

def family_label(submitter: str | None, accelerator: str | None, acc_names: dict[str, str]) -> str:
    return f"{submitter or '?'} · {acc_names.get(accelerator or '', accelerator or '?')}"


def assign_colors(families: Sequence[str]) -> dict[str, str]:
    """One colour per family, in sorted order, distinct for up to len(PALETTE) families."""
    return {f: PALETTE[i % len(PALETTE)] for i, f in enumerate(sorted(set(families)))}


def _display_names(keys: Sequence[tuple[str, str]], sysinfo: dict) -> dict[tuple[str, str], str]:
    """(submitter, system) -> system_name, with the folder name added where two systems share a name."""
    base = {k: ((sysinfo.get(k) or {}).get("system_name") or k[1]).strip() or k[1] for k in keys}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name] = counts.get(name, 0) + 1
    return {k: (n if counts[n] == 1 else f"{n} [{k[1]}]") for k, n in base.items()}


# --- the figures -------------------------------------------------------------------------------

def load_figures(con, round_version: str, benchmark: str, accelerators: Sequence[str] | None = None) -> dict:
    """The rows behind the charts and tables, filtered to the round, benchmark and accelerators."""
    scaling = select_columns(con, "mart_scaling_efficiency", [
        "submitter", "accelerator", "division", "system", "system_name", "base_system", "accelerator_count",
        "base_accelerator_count", "size_ratio", "score_minutes", "speedup", "convergence_scaling_efficiency",
        "relative_throughput", "throughput_scaling_efficiency", "throughput_unit", "is_base", "family_size",
        "is_scaling_pair", "framework_family",
    ], "round = ? and benchmark = ?", [round_version, benchmark],
        "submitter, accelerator, division, accelerator_count, score_minutes, system")
    costs = select_columns(con, "mart_cost_to_train", [
        "submitter", "system", "system_name", "accelerator", "accelerator_count", "score_minutes", "provider",
        "price_source", "region", "sku", "pricing_model", "price_per_accelerator_hour_usd", "cost_to_train_usd",
        "is_native_cloud", "provider_kind", "is_bookable",
    ], "round = ? and benchmark = ?", [round_version, benchmark], "system, provider, cost_to_train_usd, region, sku")
    utilization = select_columns(con, "mart_utilization", ["submitter", "system", "accelerator", "accelerator_count", "mfu"],
                          "round = ? and benchmark = ?", [round_version, benchmark])
    results = select_columns(con, "fct_training_result", [
        "submitter", "system", "division", "availability", "accelerator_count", "score_minutes",
    ], "round = ? and benchmark = ? and score_minutes is not null", [round_version, benchmark],
        "score_minutes")
    sysinfo = system_names(con, round_version)
    for r in results:
        info = sysinfo.get((r["submitter"], r["system"])) or {}
        r["accelerator"] = info.get("accelerator") or info.get("accelerator_model_name")
    scaling = [r for r in scaling if _matches(r["accelerator"], accelerators)]
    costs = [r for r in costs if _matches(r["accelerator"], accelerators)]
    utilization = [r for r in utilization if _matches(r["accelerator"], accelerators)]
    results = [r for r in results if _matches(r["accelerator"], accelerators)]
    # cheapest bookable price (mart_cost_to_train.is_bookable, the headline rule) per (system, cloud): one
    # bar each. Market prices (marketplaces, spot) are snapshots nobody can book: in the table only.
    cheapest: dict[tuple, dict] = {}
    for r in costs:
        if not r["is_bookable"] or r["cost_to_train_usd"] is None:
            continue
        key = (r["submitter"], r["system"], cloud_of(r["provider"]))
        if key not in cheapest or r["cost_to_train_usd"] < cheapest[key]["cost_to_train_usd"]:
            cheapest[key] = r
    priced = {(r["submitter"], r["system"]) for r in cheapest.values()}
    any_price = {(r["submitter"], r["system"]) for r in costs}
    unpriced = []
    for r in results:
        key = (r["submitter"], r["system"])
        if key in priced:
            continue
        if not r["accelerator"] or not (sysinfo.get(key) or {}).get("accelerator"):
            reason = f"accelerator '{r['accelerator'] or '?'}' not mapped to a priced model"
        elif key in any_price:
            reason = "only market prices (marketplace or spot)"
        else:
            reason = "no cloud lists a price for this accelerator"
        unpriced.append(r | {"reason": reason})
    return {"scaling": scaling, "costs": costs, "on_demand": list(cheapest.values()), "utilization": utilization,
            "results": results, "unpriced": unpriced, "systems": sysinfo,
            "accelerator_names": accelerator_names(con), "benchmark_name": benchmark_name(con, benchmark)}


def figures_table(data: dict) -> list[dict]:
    """One row per scored system: scores, scaling vs the family base, MFU, cheapest bookable cost."""
    mfu = {(r["submitter"], r["system"]): r["mfu"] for r in data["utilization"]}
    best: dict[tuple, dict] = {}
    native: dict[tuple, dict] = {}
    for r in data["on_demand"]:
        key = (r["submitter"], r["system"])
        if key not in best or r["cost_to_train_usd"] < best[key]["cost_to_train_usd"]:
            best[key] = r
        if r["is_native_cloud"] and (key not in native or r["cost_to_train_usd"] < native[key]["cost_to_train_usd"]):
            native[key] = r
    acc_names = data.get("accelerator_names", {})
    names = _display_names([(r["submitter"], r["system"]) for r in data["scaling"]], data.get("systems", {}))
    rows = []
    for r in data["scaling"]:
        key = (r["submitter"], r["system"])
        b, n = best.get(key), native.get(key)
        rows.append({
            "submitter": r["submitter"],
            "system": r["system"],
            "system_name": names[key],
            "accelerator": r["accelerator"],
            "accelerator_name": acc_names.get(r["accelerator"], r["accelerator"]),
            "division": r["division"],
            "accelerators": r["accelerator_count"],
            "score_minutes": r["score_minutes"],
            "base_system": r["base_system"],
            "size_ratio": r["size_ratio"],
            "speedup": r["speedup"],
            "convergence_scaling_efficiency": r["convergence_scaling_efficiency"],
            "relative_throughput": r["relative_throughput"],
            "throughput_scaling_efficiency": r["throughput_scaling_efficiency"],
            "mfu": mfu.get(key),
            "cheapest_on_demand_usd": b["cost_to_train_usd"] if b else None,
            "cheapest_on_demand_at": f"{cloud_name(b['provider'])} {b['region']}" if b else None,
            "own_cloud_on_demand_usd": n["cost_to_train_usd"] if n else None,
        })
    return rows


def money(v: float | None) -> str:
    return "—" if v is None else f"${v:,.2f}"


def _count(n) -> str:
    return f"{int(n):,}" if n is not None else "?"


def compute_findings(data: dict, benchmark: str) -> list[str]:
    """The headline figures, as sentences, from the same rows the charts draw."""
    acc_names = data.get("accelerator_names", {})
    names = _display_names(
        list({(r["submitter"], r["system"]) for r in data["scaling"] + data["on_demand"] + data["results"]}),
        data.get("systems", {}))
    out: list[str] = []
    fastest = min((r for r in data["results"] if r["score_minutes"]), key=lambda r: r["score_minutes"], default=None)
    if fastest:
        key = (fastest["submitter"], fastest["system"])
        out.append(f"Fastest: {fastest['submitter']} {names.get(key, fastest['system'])}, "
                   f"{_count(fastest['accelerator_count'])}× {acc_names.get(fastest['accelerator'], fastest['accelerator'])}, "
                   f"trains {data['benchmark_name']} in {fastest['score_minutes']:,.2f} minutes.")
    for measure, what in (("throughput_scaling_efficiency", "throughput scaling"),
                          ("convergence_scaling_efficiency", "convergence scaling (time to train)")):
        # each family judged at its largest system: the hardest step it reports
        largest: dict[tuple, dict] = {}
        for r in data["scaling"]:
            if r.get(measure) is None or r["is_base"] or not r["size_ratio"] or r["size_ratio"] <= 1:
                continue
            if r.get("is_scaling_pair") is False:  # h3's mart: same size as the base, not a scaling step
                continue
            fam = (r["submitter"], r["accelerator"], r["division"], r.get("framework_family"))
            if fam not in largest or r["accelerator_count"] > largest[fam]["accelerator_count"]:
                largest[fam] = r
        if largest:
            best = max(largest.values(), key=lambda r: (r[measure], r["size_ratio"]))
            extra = (f"; {best['speedup']:.2f}× faster" if measure.startswith("convergence") and best.get("speedup")
                     else "")
            out.append(f"Best {what}: {family_label(best['submitter'], best['accelerator'], acc_names)} keeps "
                       f"{best[measure]:.0%} of linear from {_count(best.get('base_accelerator_count'))} to "
                       f"{_count(best['accelerator_count'])} accelerators ({best['size_ratio']:.1f}× the hardware{extra}).")
    if data["on_demand"]:
        cheapest = min(data["on_demand"], key=lambda r: r["cost_to_train_usd"])
        key = (cheapest["submitter"], cheapest["system"])
        out.append(f"Cheapest to train: {cheapest['submitter']} {names.get(key, cheapest['system'])}, "
                   f"{_count(cheapest['accelerator_count'])}× {acc_names.get(cheapest['accelerator'], cheapest['accelerator'])}: "
                   f"{money(cheapest['cost_to_train_usd'])} on {cloud_name(cheapest['provider'])} "
                   f"({cheapest['region']}, {cheapest['pricing_model']} list price).")
        # performance per dollar between the two best accelerator families, each at its cheapest system
        per_acc: dict[str, dict] = {}
        for r in data["on_demand"]:
            if r["accelerator"] not in per_acc or r["cost_to_train_usd"] < per_acc[r["accelerator"]]["cost_to_train_usd"]:
                per_acc[r["accelerator"]] = r
        ranked = sorted(per_acc.values(), key=lambda r: r["cost_to_train_usd"])
        if len(ranked) >= 2:
            a, b = ranked[0], ranked[1]
            ratio = b["cost_to_train_usd"] / a["cost_to_train_usd"]
            label_a = f"{acc_names.get(a['accelerator'], a['accelerator'])} ({_count(a['accelerator_count'])} accelerators)"
            label_b = f"{acc_names.get(b['accelerator'], b['accelerator'])} ({_count(b['accelerator_count'])} accelerators)"
            verdict = (f"trains {data['benchmark_name']} {ratio:.2f}× cheaper than" if ratio >= 1.005
                       else f"trains {data['benchmark_name']} at about the same cost as")
            out.append(f"{label_a} {verdict} {label_b} at bookable list prices "
                       f"({money(a['cost_to_train_usd'])} vs {money(b['cost_to_train_usd'])}: "
                       f"{ratio:.2f}× the performance per dollar; the two cheapest accelerator models).")
    if data["unpriced"]:
        out.append(f"{len(data['unpriced'])} scored system(s) have no bookable price and are listed under "
                   "“Systems without a price”.")
    return out


# --- charts ------------------------------------------------------------------------------------

def _family(r: dict, acc_names: dict[str, str]) -> str:
    return family_label(r["submitter"], r["accelerator"], acc_names)


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


def scaling_chart(rows: list[dict], measure: str, title: str, y_title: str, colors: dict[str, str],
                  acc_names: dict[str, str], boxes: list | None = None):
    import altair as alt

    width, height = 640, 380
    values = []
    for r in rows:
        if r.get(measure) is None or not r.get("size_ratio"):
            continue
        eff_key = "throughput_scaling_efficiency" if measure == "relative_throughput" else "convergence_scaling_efficiency"
        # one line per scaling family (division and, when the mart has it, framework family); one
        # colour per submitter · accelerator
        line = f"{_family(r, acc_names)} {r['division']} {r.get('framework_family') or ''}"
        common = {"family": _family(r, acc_names), "line": line,
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
    color = alt.Color("family:N", title="submitter · accelerator",
                      scale=alt.Scale(domain=families, range=[colors[f] for f in families]),
                      legend=alt.Legend(labelLimit=320, orient="right"))
    x = alt.X("accelerators:Q", title="accelerators (log scale)",
              scale=alt.Scale(type="log", base=2, domain=[x_lo, x_hi], nice=False),
              axis=alt.Axis(values=sorted(set(xs)), format=",d", labelAngle=-45, labelOverlap="greedy"))
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(type="log", base=2, domain=[y_lo, y_hi], nice=False),
              axis=alt.Axis(labelOverlap="greedy"))
    base = alt.Chart(alt.Data(values=values)).encode(
        x=x, y=y, color=color,
        strokeDash=alt.StrokeDash("series:N", sort=["measured", "ideal (linear)"], legend=None),
        detail="line:N",
        tooltip=["family:N", "system:N", "base_system:N", "accelerators:Q",
                 alt.Tooltip("value:Q", format=".3f"), alt.Tooltip("efficiency:Q", format=".1%")],
    )
    lines = base.mark_line(strokeWidth=2) + base.transform_filter("datum.series == 'measured'").mark_point(
        filled=True, size=40, opacity=1)
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
    layers = [lines]
    if labels:
        text = alt.Chart(alt.Data(values=labels))
        # a white halo first, so that lines crossing a label do not hide it
        layers.append(text.mark_text(align="left", baseline="middle", fontSize=11, fontWeight="bold", stroke="white",
                                     strokeWidth=3, strokeJoin="round").encode(
            x=alt.X("px:Q", scale=None), y=alt.Y("py:Q", scale=None), text="text:N"))
        layers.append(text.mark_text(align="left", baseline="middle", fontSize=11, fontWeight="bold").encode(
            x=alt.X("px:Q", scale=None), y=alt.Y("py:Q", scale=None), text="text:N",
            color=alt.Color("family:N", scale=alt.Scale(domain=families, range=[colors[f] for f in families]),
                            legend=None)))
    return alt.layer(*layers).properties(
        title={"text": title, "subtitle": "relative to each family's smallest system; labels: scaling efficiency "
               "(share of linear); dashed: linear scaling"},
        width=width, height=height,
    )


def cost_chart(rows: list[dict], unpriced: list[dict], title: str, colors: dict[str, str],
               acc_names: dict[str, str], names: dict[tuple[str, str], str]):
    """Bars grouped per system (cheapest system first), the clouds side by side within a group
    (cheapest first), coloured by family; each bar says its cloud and cost, the submitter's own
    cloud is marked; a system without a price gets a row that says so."""
    import altair as alt

    if not rows:  # a chart of "no price" rows only says less than the table of unpriced systems
        return None
    groups: dict[str, list[dict]] = {}
    for r in rows:
        key = (r["submitter"], r["system"])
        label = (f"{names.get(key, r['system'])} · {_count(r['accelerator_count'])}× "
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
                "row": row, "label": label, "family": _family(r, acc_names), "cloud": cloud_name(r["provider"]),
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
        label = (f"{names.get(key, r['system'])} · {_count(r['accelerator_count'])}× "
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
    y = alt.Y("row:O", title=None, sort=row_ids, scale=alt.Scale(domain=row_ids, paddingInner=0, paddingOuter=0),
              axis=None)
    x = alt.X("cost:Q", title="cost to train (USD, cheapest bookable list price)",
              scale=alt.Scale(domain=[0, max_cost * 1.55], nice=False), axis=alt.Axis(format="$,.0f"))
    layers = []
    if shading:
        layers.append(alt.Chart(alt.Data(values=shading)).mark_rect(color="#f2f4f7").encode(
            y=y, x=alt.value(0), x2=alt.value(width)))
    if values:
        color = alt.Color("family:N", title="submitter · accelerator",
                          scale=alt.Scale(domain=families, range=[colors[f] for f in families]),
                          legend=alt.Legend(labelLimit=320, orient="right"))
        bars = alt.Chart(alt.Data(values=values)).encode(y=y)
        layers.append(bars.mark_bar(height={"band": 0.72}).encode(
            x=x, color=color,
            stroke=alt.condition("datum.native", alt.value("#111"), alt.value(None)),
            strokeWidth=alt.condition("datum.native", alt.value(1.5), alt.value(0)),
            tooltip=["label:N", "cloud:N", "region:N", "sku:N",
                     alt.Tooltip("price:Q", format="$.2f", title="$/accelerator-hour"),
                     alt.Tooltip("minutes:Q", format=".2f"), alt.Tooltip("cost:Q", format="$,.2f")]))
        layers.append(bars.mark_text(align="left", baseline="middle", dx=4, fontSize=10, color="#222").encode(
            x=x, text="text:N"))
    if missing:
        layers.append(alt.Chart(alt.Data(values=missing)).mark_text(
            align="left", baseline="middle", dx=4, fontSize=10, fontStyle="italic", color="#8a5300").encode(
            y=y, x=alt.value(0), text="text:N"))
    # system names left of the plot, on the first bar of each group
    layers.append(alt.Chart(alt.Data(values=heads)).mark_text(
        align="right", baseline="middle", dx=-6, fontSize=11, color="#222").encode(
        y=y, x=alt.value(0), text="label:N"))
    return alt.layer(*layers).properties(
        title={"text": title, "subtitle": "per system, one bar per cloud at its cheapest bookable "
               "$/accelerator-hour; ★ and outline: the submitter's own cloud"},
        width=width, height=max(len(row_ids) * step, 60),
    )


def _png(chart) -> bytes:
    import vl_convert as vlc

    return vlc.vegalite_to_png(chart.to_json(), scale=2)


# --- HTML --------------------------------------------------------------------------------------

def _fmt(key: str, v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else ""
    if key.endswith("_usd") and isinstance(v, (int, float)):
        return money(v)
    if isinstance(v, float):
        if "efficiency" in key or key == "mfu":
            return f"{v:.1%}"
        if key.endswith("minutes"):
            return f"{v:,.2f}"
        return f"{v:,.3g}" if abs(v) >= 1000 else f"{v:.3f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _table(rows: list[dict], columns: list[tuple[str, str]] | None = None, sub: dict[str, str] | None = None) -> str:
    """`columns`: (key, header) pairs; `sub`: key -> key of a second, smaller line in the same cell."""
    if not rows:
        return "<p><em>No rows.</em></p>"
    columns = columns or [(c, c.replace("_", " ")) for c in rows[0]]
    sub = sub or {}
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h in columns)
    body = []
    for r in rows:
        cells = []
        for c, _ in columns:
            text = html.escape(_fmt(c, r.get(c)))
            if c in sub and r.get(sub[c]) not in (None, ""):
                text += f"<br><small>{html.escape(str(r[sub[c]]))}</small>"
            num = isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool)
            cells.append(f"<td class='{'num' if num else 'txt'}'>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em auto; max-width: 1100px;
       color: #222; padding: 0 1em; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; }
nav { font-size: .9em; margin-bottom: 1em; } nav a { margin-right: 1em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
.findings { background: #f3f7fb; border: 1px solid #c9d9ea; border-radius: 6px; padding: .6em 1.2em; }
.findings h2 { margin-top: .3em; } .findings li { margin: .3em 0; }
table { border-collapse: collapse; font-size: 0.8em; margin: 1em 0; width: 100%; table-layout: auto; }
th, td { border: 1px solid #ddd; padding: 3px 6px; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f5f5f5; text-align: left; overflow-wrap: normal; } td.num { text-align: right; white-space: nowrap; }
td small { color: #777; }
.note { color: #8a5300; }
dl dt { font-weight: 600; margin-top: .5em; }
"""

DEFINITIONS = [
    ("Scaling family", "results of one round, submitter, benchmark, accelerator and division; the base is the "
     "family's smallest system (ties: fastest score, then system name)."),
    ("Throughput scaling efficiency", "(mean steady-state throughput at N₁ / at N₀) / (N₁ / N₀); weak scaling when "
     "the global batch grows at least 0.9× as much as the system."),
    ("Convergence scaling efficiency", "(time-to-train at N₀ / at N₁) / (N₁ / N₀), from the official scores."),
    ("Cost to train", "score in hours × accelerators × price per accelerator-hour; performance per dollar is its inverse."),
    ("MFU", "samples to converge × model FLOPs per sample / (time-to-train × accelerators × peak dense BF16 FLOP/s)."),
]

FIGURE_COLUMNS = [
    ("system_name", "system"), ("submitter", "submitter"), ("accelerator_name", "accelerator"),
    ("accelerators", "count"), ("score_minutes", "minutes"), ("size_ratio", "× base size"), ("speedup", "speedup"),
    ("convergence_scaling_efficiency", "convergence eff."), ("throughput_scaling_efficiency", "throughput eff."),
    ("mfu", "MFU"), ("cheapest_on_demand_usd", "cheapest bookable"), ("own_cloud_on_demand_usd", "own cloud"),
]


def render_html(report: Report, images: dict[str, bytes], data: dict, nav: Sequence[tuple[str, str]] = ()) -> str:
    title = f"MLPerf Training {report.round} · {data.get('benchmark_name') or report.benchmark}: scaling and cost"
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
    ]
    if nav:
        parts.append("<nav>" + "".join(f"<a href='{html.escape(h, quote=True)}'>{html.escape(t)}</a>" for h, t in nav)
                     + "</nav>")
    parts += [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Benchmark <code>{html.escape(report.benchmark)}</code>. Generated "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC} from the published warehouse.</p>",
    ]
    if report.findings:
        parts.append("<section class='findings' id='findings'><h2>Findings</h2><ul>"
                     + "".join(f"<li>{html.escape(f)}</li>" for f in report.findings) + "</ul></section>")
    for note in report.notes:
        parts.append(f"<p class='note'>{html.escape(note)}</p>")
    for name, chart_title in CHARTS.items():
        if name in images:
            b64 = base64.b64encode(images[name]).decode("ascii")
            parts.append(f"<figure id='{name}'><img alt='{html.escape(chart_title)}' src='data:image/png;base64,{b64}'>"
                         f"<figcaption>{html.escape(chart_title)}</figcaption></figure>")
    parts.append("<h2>Figures</h2>")
    parts.append(_table(report.figures, FIGURE_COLUMNS, {"system_name": "system",
                                                         "cheapest_on_demand_usd": "cheapest_on_demand_at"}))
    parts.append("<h2 id='unpriced'>Systems without a price</h2>")
    if report.unpriced:
        parts.append("<p>Scored results of this benchmark with no bookable price (hyperscaler or neocloud list price), "
                     "so no cost to train:</p>")
        parts.append(_table(report.unpriced, [("system_name", "system"), ("submitter", "submitter"),
                                              ("accelerator_name", "accelerator"), ("accelerator_count", "count"),
                                              ("score_minutes", "minutes"), ("reason", "why no cost")],
                            {"system_name": "system"}))
    else:
        parts.append("<p>Every scored system has an on-demand price.</p>")
    acc_names = data.get("accelerator_names", {})
    names = _display_names(list({(r["submitter"], r["system"]) for r in data["costs"]}), data.get("systems", {}))
    options = [{"system_name": names[(r["submitter"], r["system"])], "system": r["system"],
                "accelerator_name": acc_names.get(r["accelerator"], r["accelerator"]),
                "accelerator_count": r["accelerator_count"], "cloud": cloud_name(r["provider"]),
                "price_source": r.get("price_source"), "region": r["region"], "sku": r["sku"],
                "pricing_model": r["pricing_model"], "price_per_accelerator_hour_usd": r["price_per_accelerator_hour_usd"],
                "cost_to_train_usd": r["cost_to_train_usd"], "own_cloud": r["is_native_cloud"]} for r in data["costs"]]
    option_cols = [("system_name", "system"), ("accelerator_name", "accelerator"), ("accelerator_count", "count"),
                   ("cloud", "cloud"), ("region", "region"), ("sku", "SKU"), ("pricing_model", "pricing"),
                   ("price_per_accelerator_hour_usd", "$/accelerator-hour"), ("cost_to_train_usd", "cost to train"),
                   ("own_cloud", "own cloud")]
    if any(o["price_source"] for o in options):
        option_cols.insert(4, ("price_source", "price source"))
    parts.append(f"<h2>Cost to train at every price option</h2><details><summary>{len(options)} price options "
                 "(every cloud, region and pricing model)</summary>")
    parts.append(_table(options, option_cols, {"system_name": "system"}))
    parts.append("</details><h2>Definitions</h2><dl>")
    for term, text in DEFINITIONS:
        parts.append(f"<dt>{html.escape(term)}</dt><dd>{html.escape(text)}</dd>")
    parts.append("</dl></body></html>")
    return "\n".join(parts)


REPORT_MARKER = ".mlperf-warehouse-report"  # in every report folder: only a folder holding it is ever replaced


def write_report(con: duckdb.DuckDBPyConnection, round_version: str, benchmark: str, out: Path,
                 accelerators: Sequence[str] | None = None) -> Report:
    """`build_report` into a folder that then replaces `out` whole: `out` must be missing, empty or an
    earlier report (its REPORT_MARKER). The Report's paths are those under `out`."""
    with owned_directory(out, REPORT_MARKER, "report") as work:
        report = build_report(con, round_version, benchmark, work, accelerators)
    report.out_dir, report.html = Path(out).resolve(), rebased(report.html, work, out)
    report.pngs = {name: rebased(path, work, out) for name, path in report.pngs.items()}
    return report


def build_report(
    con: duckdb.DuckDBPyConnection,
    round_version: str,
    benchmark: str,
    out_dir: Path,
    accelerators: Sequence[str] | None = None,
    nav: Sequence[tuple[str, str]] = (),
) -> Report:
    """Write `<out_dir>/report.html`, one PNG per chart that has data, and `figures.json`.
    `nav`: (href, text) links shown above the title (the results site links its pages this way)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_figures(con, round_version, benchmark, accelerators)
    report = Report(round_version, benchmark, out_dir, out_dir / "report.html")
    report.figures = figures_table(data)
    acc_names = data["accelerator_names"]
    names = _display_names(list({(r["submitter"], r["system"]) for r in data["results"] + data["on_demand"]
                                 + data["scaling"]}), data["systems"])
    report.unpriced = [r | {"system_name": names[(r["submitter"], r["system"])],
                            "accelerator_name": acc_names.get(r["accelerator"], r["accelerator"])}
                       for r in data["unpriced"]]
    report.colors = assign_colors([_family(r, acc_names) for r in data["scaling"] + data["on_demand"]
                                   + data["unpriced"]])
    if not data["results"]:
        report.notes.append(f"No scored results for {benchmark} in {round_version}"
                            + (f" on {', '.join(accelerators)}" if accelerators else "") + ".")
    report.findings = compute_findings(data, benchmark)
    multi = [r for r in data["scaling"] if (r["family_size"] or 0) > 1]
    if data["scaling"] and not multi:
        report.notes.append("No scaling family has more than one system size: the scaling charts show single points.")
    scaling_rows = [r | {"system_name": names.get((r["submitter"], r["system"]))} for r in data["scaling"]]
    charts = {}
    for name, measure, y_title in (("weak_scaling", "relative_throughput", "relative steady-state throughput"),
                                   ("convergence_scaling", "speedup", "speedup (base time-to-train / time-to-train)")):
        boxes: list = []
        charts[name] = scaling_chart(scaling_rows, measure, CHARTS[name], y_title, report.colors, acc_names, boxes)
        report.label_boxes[name] = boxes
    charts["cost_to_train"] = cost_chart(data["on_demand"], data["unpriced"], CHARTS["cost_to_train"],
                                         report.colors, acc_names, names)
    images = {}
    for name, chart in charts.items():
        if chart is None:
            report.notes.append(f"{CHARTS[name]}: no data" + (
                " (no on-demand price for any of these accelerators: see “Systems without a price”)."
                if name == "cost_to_train" and data["unpriced"] else "."))
            continue
        images[name] = _png(chart)
        path = out_dir / f"{name}.png"
        path.write_bytes(images[name])
        report.pngs[name] = path
        (out_dir / f"{name}.vl.json").write_text(chart.to_json())
    (out_dir / "figures.json").write_text(json.dumps(_json_safe(report.figures), indent=1))
    report.html.write_text(render_html(report, images, data, nav), encoding="utf-8")
    return report


def default_benchmark(con: duckdb.DuckDBPyConnection, round_version: str) -> str | None:
    """gpt3 or a Llama pre-training benchmark if the round has it, else its most-submitted benchmark."""
    counts = dict(con.execute(
        "select benchmark, count(*) from fct_training_result where round = ? and score_minutes is not null group by 1",
        [round_version],
    ).fetchall())
    for preferred in ("gpt3", "llama31_405b", "llama31_8b", "llama2_70b_lora"):
        if counts.get(preferred):
            return preferred
    return max(counts, key=lambda b: (counts[b], b)) if counts else None


def latest_round(con: duckdb.DuckDBPyConnection) -> str | None:
    from pipelines.lib.mlperf.rounds import round_sort_key

    rounds = [r for (r,) in con.execute(
        "select distinct round from fct_training_result where score_minutes is not null").fetchall()]
    return max(rounds, key=round_sort_key) if rounds else None
