"""The scaling and cost report of one round and benchmark, from a read-only warehouse connection.

Charts are drawn with Altair and rendered to PNG by vl-convert (no browser, no network). The HTML
page embeds the PNGs as base64 `<img>`s and tables of the figures, so it is one self-contained file
that opens offline.
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import duckdb

ON_DEMAND = {"ondemand"}  # pricing_model with '-', '_' and spaces removed, lower case

CHARTS = {
    "weak_scaling": "Relative throughput vs cluster size (weak scaling)",
    "convergence_scaling": "Speedup vs cluster size (convergence scaling)",
    "cost_to_train": "Cost to train at on-demand list price",
}


@dataclass
class Report:
    round: str
    benchmark: str
    out_dir: Path
    html: Path
    pngs: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    figures: list[dict] = field(default_factory=list)


def _records(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence = ()) -> list[dict]:
    cur = con.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row)) for row in cur.fetchall()]


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


def load_figures(con, round_version: str, benchmark: str, accelerators: Sequence[str] | None = None) -> dict:
    """The rows behind the charts and tables, filtered to the round, benchmark and accelerators."""
    scaling = _records(con, """
        select submitter, accelerator, division, system, base_system, accelerator_count, base_accelerator_count,
            size_ratio, score_minutes, speedup, convergence_scaling_efficiency, relative_throughput,
            weak_scaling_efficiency, throughput_unit, is_base, family_size
        from mart_scaling_efficiency
        where round = ? and benchmark = ?
        order by submitter, accelerator, division, accelerator_count, score_minutes, system
    """, [round_version, benchmark])
    costs = _records(con, """
        select submitter, system, accelerator, accelerator_count, score_minutes, provider, region, sku,
            pricing_model, price_per_accelerator_hour_usd, cost_to_train_usd, is_native_cloud
        from mart_cost_to_train
        where round = ? and benchmark = ?
        order by system, provider, cost_to_train_usd, region, sku
    """, [round_version, benchmark])
    utilization = _records(con, """
        select submitter, system, accelerator, accelerator_count, mfu
        from mart_utilization
        where round = ? and benchmark = ?
    """, [round_version, benchmark])
    scaling = [r for r in scaling if _matches(r["accelerator"], accelerators)]
    costs = [r for r in costs if _matches(r["accelerator"], accelerators)]
    utilization = [r for r in utilization if _matches(r["accelerator"], accelerators)]
    on_demand = [r for r in costs if "".join(ch for ch in (r["pricing_model"] or "").lower() if ch.isalnum()) in ON_DEMAND]
    # cheapest on-demand list price per (system, provider): one bar each
    cheapest: dict[tuple, dict] = {}
    for r in on_demand:
        key = (r["submitter"], r["system"], r["provider"])
        if key not in cheapest or r["cost_to_train_usd"] < cheapest[key]["cost_to_train_usd"]:
            cheapest[key] = r
    return {"scaling": scaling, "costs": costs, "on_demand": list(cheapest.values()), "utilization": utilization}


def figures_table(data: dict) -> list[dict]:
    """One row per system: scores, scaling vs the family base, MFU, cheapest on-demand cost."""
    mfu = {(r["submitter"], r["system"]): r["mfu"] for r in data["utilization"]}
    best: dict[tuple, dict] = {}
    native: dict[tuple, dict] = {}
    for r in data["on_demand"]:
        key = (r["submitter"], r["system"])
        if key not in best or r["cost_to_train_usd"] < best[key]["cost_to_train_usd"]:
            best[key] = r
        if r["is_native_cloud"] and (key not in native or r["cost_to_train_usd"] < native[key]["cost_to_train_usd"]):
            native[key] = r
    rows = []
    for r in data["scaling"]:
        key = (r["submitter"], r["system"])
        b, n = best.get(key), native.get(key)
        rows.append({
            "submitter": r["submitter"],
            "system": r["system"],
            "accelerator": r["accelerator"],
            "accelerators": r["accelerator_count"],
            "score_minutes": r["score_minutes"],
            "base_system": r["base_system"],
            "size_ratio": r["size_ratio"],
            "speedup": r["speedup"],
            "convergence_scaling_efficiency": r["convergence_scaling_efficiency"],
            "relative_throughput": r["relative_throughput"],
            "weak_scaling_efficiency": r["weak_scaling_efficiency"],
            "mfu": mfu.get(key),
            "cheapest_on_demand_usd": b["cost_to_train_usd"] if b else None,
            "cheapest_on_demand_at": f"{b['provider']} {b['region']}" if b else None,
            "own_cloud_on_demand_usd": n["cost_to_train_usd"] if n else None,
        })
    return rows


def _family(r: dict) -> str:
    return f"{r['submitter']} · {r['accelerator']}" + (f" ({r['division']})" if r.get("division") not in (None, "closed") else "")


def scaling_chart(rows: list[dict], measure: str, title: str, y_title: str):
    import altair as alt

    values = []
    for r in rows:
        if r.get(measure) is None:
            continue
        family = _family(r)
        values.append({"family": family, "series": "measured", "accelerators": r["accelerator_count"],
                       "value": r[measure], "system": r["system"], "base_system": r["base_system"],
                       "efficiency": r["weak_scaling_efficiency" if measure == "relative_throughput"
                                       else "convergence_scaling_efficiency"]})
        values.append({"family": family, "series": "ideal (linear)", "accelerators": r["accelerator_count"],
                       "value": r["size_ratio"], "system": r["system"], "base_system": r["base_system"],
                       "efficiency": 1.0})
    if not values:
        return None
    base = alt.Chart(alt.Data(values=values)).encode(
        x=alt.X("accelerators:Q", title="accelerators (log scale)", scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=sorted({v["accelerators"] for v in values}), format="d", labelAngle=-45)),
        y=alt.Y("value:Q", title=y_title, scale=alt.Scale(type="log", base=2)),
        color=alt.Color("family:N", title="submitter · accelerator"),
        strokeDash=alt.StrokeDash("series:N", title=None, sort=["measured", "ideal (linear)"],
                                  legend=alt.Legend(symbolType="stroke", symbolStrokeWidth=2, symbolStrokeColor="#444", symbolSize=300)),
        detail="series:N",
        tooltip=["system:N", "base_system:N", "accelerators:Q",
                 alt.Tooltip("value:Q", format=".3f"), alt.Tooltip("efficiency:Q", format=".1%")],
    )
    lines = base.mark_line() + base.mark_point(filled=True, size=30).encode(strokeDash=alt.value([1, 0]))
    labels = base.transform_filter("datum.series == 'measured' && datum.system != datum.base_system").mark_text(dx=6, dy=-8, fontSize=10, align="left").encode(
        text=alt.Text("efficiency:Q", format=".0%")
    )
    return (lines + labels).properties(
        title={"text": title, "subtitle": "relative to each family's smallest system; labels: scaling efficiency"},
        width=560, height=360,
    )


def cost_chart(rows: list[dict], title: str):
    import altair as alt

    if not rows:
        return None
    values = [{
        "label": f"{r['system']} · {r['accelerator_count']}× {r['accelerator']} · {r['provider']}"
                 + (" (own cloud)" if r["is_native_cloud"] else ""),
        "provider": r["provider"],
        "cost": r["cost_to_train_usd"], "region": r["region"], "sku": r["sku"],
        "price": r["price_per_accelerator_hour_usd"], "minutes": r["score_minutes"],
    } for r in rows]
    order = [v["label"] for v in sorted(values, key=lambda v: v["cost"])]
    order = list(dict.fromkeys(order))
    bars = alt.Chart(alt.Data(values=values)).mark_bar().encode(
        y=alt.Y("label:N", title=None, sort=order, axis=alt.Axis(labelLimit=420)),
        x=alt.X("cost:Q", title="cost to train (USD, on-demand list price)"),
        color=alt.Color("provider:N", title="cloud"),
        tooltip=["label:N", "provider:N", "region:N", "sku:N", alt.Tooltip("price:Q", format="$.2f", title="$/accelerator-hour"),
                 alt.Tooltip("minutes:Q", format=".2f"), alt.Tooltip("cost:Q", format="$,.0f")],
    )
    text = bars.mark_text(align="left", dx=3, fontSize=10).encode(text=alt.Text("cost:Q", format="$,.0f"))
    return (bars + text).properties(
        title={"text": title, "subtitle": "score hours × accelerators × cheapest on-demand $/accelerator-hour per cloud"},
        width=560,
    )


def _png(chart) -> bytes:
    import vl_convert as vlc

    return vlc.vegalite_to_png(chart.to_json(), scale=2)


def _fmt(key: str, v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        if key.endswith("_usd"):
            return f"${v:,.0f}"
        if "efficiency" in key or key == "mfu":
            return f"{v:.1%}"
        return f"{v:,.3g}" if abs(v) >= 1000 else f"{v:.3f}"
    return str(v)


def _table(rows: list[dict]) -> str:
    if not rows:
        return "<p><em>No rows.</em></p>"
    cols = list(rows[0])
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(c, r[c]))}</td>" for c in cols) + "</tr>" for r in rows
    )
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
th { background: #f5f5f5; } td:nth-child(-n+3), th:nth-child(-n+3) { text-align: left; }
.note { color: #8a5300; } .scroll { overflow-x: auto; }
dl dt { font-weight: 600; margin-top: .5em; }
"""

DEFINITIONS = [
    ("Scaling family", "results of one round, submitter, benchmark, accelerator and division; the base is the "
     "family's smallest system (ties: fastest score, then system name)."),
    ("Weak scaling efficiency", "(mean steady-state throughput at N₁ / at N₀) / (N₁ / N₀)."),
    ("Convergence scaling efficiency", "(time-to-train at N₀ / at N₁) / (N₁ / N₀), from the official scores."),
    ("Cost to train", "score in hours × accelerators × price per accelerator-hour; performance per dollar is its inverse."),
    ("MFU", "samples to converge × model FLOPs per sample / (time-to-train × accelerators × peak dense BF16 FLOP/s)."),
]


def render_html(report: Report, images: dict[str, bytes], data: dict) -> str:
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>MLPerf Training {html.escape(report.round)} · {html.escape(report.benchmark)}: scaling and cost</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>MLPerf Training {html.escape(report.round)} · {html.escape(report.benchmark)}: scaling and cost</h1>",
        f"<p>Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC} from the published warehouse.</p>",
    ]
    for note in report.notes:
        parts.append(f"<p class='note'>{html.escape(note)}</p>")
    for name, title in CHARTS.items():
        if name in images:
            b64 = base64.b64encode(images[name]).decode("ascii")
            parts.append(f"<figure id='{name}'><img alt='{html.escape(title)}' src='data:image/png;base64,{b64}'>"
                         f"<figcaption>{html.escape(title)}</figcaption></figure>")
    parts.append("<h2>Figures</h2>")
    parts.append(_table(report.figures))
    parts.append("<h2>Cost to train at every price option</h2>")
    parts.append(_table([{k: r[k] for k in ("submitter", "system", "accelerator", "accelerator_count", "provider",
                                            "region", "sku", "pricing_model", "price_per_accelerator_hour_usd",
                                            "cost_to_train_usd", "is_native_cloud")} for r in data["costs"]]))
    parts.append("<h2>Definitions</h2><dl>")
    for term, text in DEFINITIONS:
        parts.append(f"<dt>{html.escape(term)}</dt><dd>{html.escape(text)}</dd>")
    parts.append("</dl></body></html>")
    return "\n".join(parts)


def build_report(
    con: duckdb.DuckDBPyConnection,
    round_version: str,
    benchmark: str,
    out_dir: Path,
    accelerators: Sequence[str] | None = None,
) -> Report:
    """Write `<out_dir>/report.html`, one PNG per chart that has data, and `figures.json`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_figures(con, round_version, benchmark, accelerators)
    report = Report(round_version, benchmark, out_dir, out_dir / "report.html")
    report.figures = figures_table(data)
    if not data["scaling"]:
        report.notes.append(f"No scored results for {benchmark} in {round_version}"
                            + (f" on {', '.join(accelerators)}" if accelerators else "") + ".")
    multi = [r for r in data["scaling"] if r["family_size"] > 1]
    if data["scaling"] and not multi:
        report.notes.append("No scaling family has more than one system size: the scaling charts show single points.")
    charts = {
        "weak_scaling": scaling_chart(data["scaling"], "relative_throughput", CHARTS["weak_scaling"],
                                      "relative steady-state throughput"),
        "convergence_scaling": scaling_chart(data["scaling"], "speedup", CHARTS["convergence_scaling"],
                                             "speedup (base time-to-train / time-to-train)"),
        "cost_to_train": cost_chart(data["on_demand"], CHARTS["cost_to_train"]),
    }
    images = {}
    for name, chart in charts.items():
        if chart is None:
            report.notes.append(f"{CHARTS[name]}: no data.")
            continue
        images[name] = _png(chart)
        path = out_dir / f"{name}.png"
        path.write_bytes(images[name])
        report.pngs[name] = path
        (out_dir / f"{name}.vl.json").write_text(chart.to_json())
    (out_dir / "figures.json").write_text(json.dumps(_json_safe(report.figures), indent=1))
    report.html.write_text(render_html(report, images, data), encoding="utf-8")
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
    from .rounds import round_sort_key

    rounds = [r for (r,) in con.execute(
        "select distinct round from fct_training_result where score_minutes is not null").fetchall()]
    return max(rounds, key=round_sort_key) if rounds else None
