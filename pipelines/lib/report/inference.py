"""What the site and the report show of an MLPerf Inference round: per model and scenario, every valid result
beside its price per million (mart_inference_cost), cheapest first, with the latency limit that applied and a
chart of throughput per accelerator against price."""

from __future__ import annotations

import duckdb

from pipelines.lib.io.jsonsafe import dumps_strict

_RESULTS = """
    select r.division, r.submitter, r.system, r.system_name, r.model, r.scenario, r.location, r.accelerator,
        r.accelerator_model_name, r.accelerator_count, r.performance_result, r.performance_units,
        r.performance_per_accelerator, r.ttft_limit_ms, r.tpot_limit_ms, r.target_latency_ms,
        c.usd_per_million, c.unit, c.provider, c.region, c.pricing_model, c.price_per_accelerator_hour_usd,
        c.no_cost_reason
    from fct_inference_result as r
    left join mart_inference_cost as c using (round, location)
    where r.round = $round and r.valid and ($model is null or r.model = $model)
        and ($scenario is null or r.scenario = $scenario)
    order by r.division, r.model, r.scenario, c.usd_per_million nulls last, r.performance_result desc, r.location
"""


def inference_groups(con: duckdb.DuckDBPyConnection, round_version: str, acc_names: dict[str, str],
                     model: str | None = None, scenario: str | None = None) -> list[dict]:
    """One group per (division, model, scenario) of the round's valid results, rows cheapest first."""
    cursor = con.execute(_RESULTS, {"round": round_version, "model": model, "scenario": scenario})
    names = [d[0] for d in cursor.description]
    groups: dict[tuple[str, str, str], dict] = {}
    for values in cursor.fetchall():
        row = dict(zip(names, values, strict=True))
        row["accelerator"] = acc_names.get(row["accelerator"]) or row["accelerator_model_name"] or ""
        key = (row["division"], row["model"], row["scenario"])
        group = groups.setdefault(key, {
            "model": row["model"] + ("" if row["division"] == "closed" else f" ({row['division']})"),
            "scenario": row["scenario"], "units": row["performance_units"], "unit": row["unit"] or "units",
            "rows": [], "key": "-".join(key), "limits": latency_limits(row)})
        group["rows"].append(row)
    return list(groups.values())


def latency_limits(row: dict) -> str:
    """The latency limit a result of this scenario met, as the summary states it."""
    if row["ttft_limit_ms"]:
        return (f"Valid only within LoadGen's limits: time to first token ≤ {row['ttft_limit_ms']:,.0f} ms and time "
                f"per output token ≤ {row['tpot_limit_ms']:,.0f} ms (99th percentile).")
    if row["target_latency_ms"]:
        return f"Valid only within LoadGen's latency bound: {row['target_latency_ms']:,.0f} ms (99th percentile)."
    if row["scenario"] == "Offline":
        return "Offline: all queries at once, no latency bound."
    return "Latency scenario: the result is a latency, lower is better; no throughput to price."


def price_chart(group: dict) -> dict | None:
    """Vega-Lite: throughput per accelerator against USD per million units, one point per priced system (None
    with fewer than two)."""
    rows = [r for r in group["rows"] if r["usd_per_million"] is not None and r["performance_per_accelerator"]]
    if len(rows) < 2:
        return None
    values = [{"system": f"{r['submitter']} {r['system_name']}", "accelerator": r["accelerator"],
               "usd_per_million": r["usd_per_million"], "per_accelerator": r["performance_per_accelerator"]}
              for r in rows]
    width = 520
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json", "width": width, "height": 260,
        "data": {"values": values}, "mark": {"type": "point", "filled": True, "size": 70},
        "encoding": {
            "x": {"field": "usd_per_million", "type": "quantitative", "scale": {"type": "log"},
                  "title": f"USD per million {group['unit']} (bookable price)"},
            "y": {"field": "per_accelerator", "type": "quantitative", "title": f"{group['units']} per accelerator"},
            # below the plot, one name per line, as wide as the plot: accelerator names run to 75 characters
            # ("AMD Instinct MI300X 192GB HBM3 (x32), AMD Instinct MI325X ..."), past Vega's 160-pixel default
            "color": {"field": "accelerator", "type": "nominal", "title": "accelerator",
                      "legend": {"orient": "bottom", "direction": "vertical", "columns": 1, "labelLimit": width}},
            "tooltip": [{"field": "system"}, {"field": "accelerator"},
                        {"field": "usd_per_million", "format": ".4f"}, {"field": "per_accelerator", "format": ",.1f"}],
        },
    }


def write_inference_report(con: duckdb.DuckDBPyConnection, round_version: str, out_dir, model: str | None = None,
                           scenario: str | None = None):
    """`inference_<round>.html` in `out_dir`: self-contained (styles inline, charts as SVG images)."""
    import base64
    from datetime import UTC, datetime
    from importlib import resources
    from pathlib import Path

    from pipelines.lib.report.charts import render_svg
    from pipelines.lib.report.figures import accelerator_names
    from pipelines.lib.report.render import render

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = inference_groups(con, round_version, accelerator_names(con), model, scenario)
    for number, group in enumerate(groups, 1):
        group["anchor"] = f"group-{number}"
        spec = price_chart(group)
        group["svg_base64"] = base64.b64encode(render_svg(dumps_strict(spec)).encode()).decode() if spec else ""
    css = (resources.files("pipelines.lib.report.site") / "static" / "site.css").read_text(encoding="utf-8")
    title = f"MLPerf Inference {round_version}, priced" + (f": {model}" if model else "") + (
        f" · {scenario}" if scenario else "")
    path = out_dir / f"inference_{round_version}.html"
    path.write_text(render("report_inference.html.j2", title=title, css=css, groups=groups, model=model,
                           scenario=scenario, generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
                    encoding="utf-8")
    return path, groups
