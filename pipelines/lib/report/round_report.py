"""The scaling and cost report of one round and benchmark: `build_report` assembles it from a read-only
warehouse connection and writes it.

    figures.py    the rows (SQL), the figures table, the findings, names and colours
    charts.py     the Vega-Lite charts (plain data), rendered by vl-convert
    templates/    report.html.j2 (and the CSS it inlines), rendered by render.py with autoescape

The page is one self-contained file: the charts are embedded as SVG images (an SVG inside `<img>` runs
no script, whatever names it holds), the figures are tables. `png=True` also writes each chart as a PNG
file (for slides). The results site renders no chart itself (`live_charts`): its report pages carry each
chart's spec and draw it in the browser with the Vega bundle of the site's assets, many times faster.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
from markupsafe import Markup

from pipelines.lib.io.files import owned_directory, rebased
from pipelines.lib.io.jsonsafe import dumps_strict
from pipelines.lib.mlperf.suites import TRAINING
from pipelines.lib.report import charts as chart_lib
from pipelines.lib.report.figures import (
    assign_colors,
    cloud_name,
    compute_findings,
    display_names,
    family_of,
    figures_table,
    load_figures,
    provisional_rounds,
)
from pipelines.lib.report.render import render

REPORT_MARKER = ".mlperf-warehouse-report"  # in every report folder: only a folder holding it is ever replaced

DEFINITIONS = [
    ("Scaling family", "results of one round, submitter, benchmark, accelerator, division and framework family; "
     "the base is the family's smallest system (ties: fastest score, then system name)."),
    ("Throughput scaling efficiency", "(mean steady-state throughput at N₁ / at N₀) / (N₁ / N₀); weak scaling when "
     "the global batch grows at least 0.9× as much as the system, strong when it stays within 10 %."),
    ("Convergence scaling efficiency", "(time-to-train at N₀ / at N₁) / (N₁ / N₀), from {scores}."),
    ("Cost to train", "score in hours × accelerators × price per accelerator-hour, at the cheapest bookable price "
     "(a hyperscaler's or neocloud's published rate, on demand or committed); performance per dollar is its "
     "inverse."),
    ("MFU", "samples to converge × model FLOPs per sample / (time-to-train × accelerators × the dense peak "
     "FLOP/s of the result's training precision)."),
]

# where the report's scores come from: the round's own rules, or (a provisional round) rules not its own
SCORES = {False: "the official scores", True: "the scores under the rules named at the top (provisional)"}


def definitions(provisional: bool) -> list[tuple[str, str]]:
    return [(term, text.format(scores=SCORES[provisional])) for term, text in DEFINITIONS]


FIGURE_COLUMNS = [
    ("system_name", "system"), ("submitter", "submitter"), ("accelerator_name", "accelerator"),
    ("accelerators", "count"), ("score_minutes", "minutes"), ("size_ratio", "× base size"), ("speedup", "speedup"),
    ("convergence_scaling_efficiency", "convergence eff."), ("throughput_scaling_efficiency", "throughput eff."),
    ("mfu", "MFU"), ("cheapest_bookable_usd", "cheapest bookable"), ("own_cloud_bookable_usd", "own cloud"),
    ("energy_to_train_kwh", "energy (kWh)"), ("average_power_per_accelerator_w", "W per accelerator"),
]
ENERGY_COLUMNS = frozenset({"energy_to_train_kwh", "average_power_per_accelerator_w"})  # shown where measured
UNPRICED_COLUMNS = [("system_name", "system"), ("submitter", "submitter"), ("accelerator_name", "accelerator"),
                    ("accelerator_count", "count"), ("score_minutes", "minutes"), ("reason", "why no cost")]
OPTION_COLUMNS = [("system_name", "system"), ("accelerator_name", "accelerator"), ("accelerator_count", "count"),
                  ("cloud", "cloud"), ("price_source", "price source"), ("region", "region"), ("sku", "SKU"),
                  ("pricing_model", "pricing"), ("price_per_accelerator_hour_usd", "$/accelerator-hour"),
                  ("cost_to_train_usd", "cost to train"), ("own_cloud", "own cloud")]


@dataclass
class Report:
    round: str
    benchmark: str
    out_dir: Path
    html: Path
    pngs: dict[str, Path] = field(default_factory=dict)
    svgs: dict[str, str] = field(default_factory=dict)  # chart name -> SVG, as embedded in the page
    notes: list[str] = field(default_factory=list)
    provisional: str | None = None  # why the round's scores are judged by rules not its own (dim_rules_release)
    figures: list[dict] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    unpriced: list[dict] = field(default_factory=list)
    colors: dict[str, str] = field(default_factory=dict)  # family label -> colour
    label_boxes: dict[str, list[tuple[float, float, float, float]]] = field(default_factory=dict)


def _json_safe(rows: list[dict]) -> list[dict]:
    return [{k: (v if v is None or isinstance(v, (bool, int, float, str)) else str(v)) for k, v in r.items()}
            for r in rows]


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
    png: bool = True,
    live_charts: Sequence[str] = (),
) -> Report:
    """Write `<out_dir>/report.html`, each chart's Vega-Lite spec (and PNG unless `png` is false) and
    `figures.json`. `nav`: (href, text) links shown above the title (the results site links its pages so).
    `live_charts`: the scripts (relative URLs: the Vega bundle, then charts.js) that draw the charts in the
    browser; empty: the charts are rendered here and embedded as SVG."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_figures(con, round_version, benchmark, accelerators)
    report = Report(round_version, benchmark, out_dir, out_dir / "report.html")
    report.figures = figures_table(data)
    report.provisional = provisional_rounds(con).get((TRAINING.name, round_version))
    acc_names = data["accelerator_names"]
    names = display_names(list({(r["submitter"], r["system"]) for r in data["results"] + data["bookable"]
                                + data["scaling"]}), data["systems"])
    report.unpriced = [r | {"system_name": names[(r["submitter"], r["system"])],
                            "accelerator_name": acc_names.get(r["accelerator"], r["accelerator"])}
                       for r in data["unpriced"]]
    report.colors = assign_colors([family_of(r, acc_names) for r in data["scaling"] + data["bookable"]
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
        charts[name] = chart_lib.scaling_chart(scaling_rows, measure, chart_lib.CHARTS[name], y_title, report.colors,
                                               acc_names, boxes)
        report.label_boxes[name] = boxes
    charts["cost_to_train"] = chart_lib.cost_chart(data["bookable"], data["unpriced"], chart_lib.CHARTS["cost_to_train"],
                                                   report.colors, acc_names, names)
    specs: dict[str, str] = {}
    for name, chart in charts.items():
        if chart is None:
            report.notes.append(f"{chart_lib.CHARTS[name]}: no data" + (
                " (no bookable price for any of these accelerators: see “Systems without a price”)."
                if name == "cost_to_train" and data["unpriced"] else "."))
            continue
        spec = chart_lib.chart_spec(chart)
        (out_dir / f"{name}.vl.json").write_text(spec)
        specs[name] = spec
        svg = chart_lib.render_svg(spec) if png or not live_charts else ""
        if not live_charts:
            report.svgs[name] = svg
        if png:
            path = out_dir / f"{name}.png"
            path.write_bytes(chart_lib.svg_to_png(svg))
            report.pngs[name] = path
    (out_dir / "figures.json").write_text(dumps_strict(_json_safe(report.figures), indent=1))
    report.html.write_text(render_html(report, data, nav, specs, live_charts), encoding="utf-8")
    return report


def script_json(spec: str) -> Markup:
    """A JSON document to sit inside <script type="application/json">: no `<`, `>` or `&` can close it."""
    return Markup(spec.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"))


def render_html(report: Report, data: dict, nav: Sequence[tuple[str, str]] = (), specs: dict[str, str] | None = None,
                live_charts: Sequence[str] = ()) -> str:
    acc_names = data.get("accelerator_names", {})
    names = display_names(list({(r["submitter"], r["system"]) for r in data["costs"]}), data.get("systems", {}))
    options = [{"system_name": names[(r["submitter"], r["system"])], "system": r["system"],
                "accelerator_name": acc_names.get(r["accelerator"], r["accelerator"]),
                "accelerator_count": r["accelerator_count"], "cloud": cloud_name(r["provider"]),
                "price_source": r.get("price_source"), "region": r["region"], "sku": r["sku"],
                "pricing_model": r["pricing_model"], "price_per_accelerator_hour_usd": r["price_per_accelerator_hour_usd"],
                "cost_to_train_usd": r["cost_to_train_usd"], "own_cloud": r["is_native_cloud"]} for r in data["costs"]]
    option_columns = [c for c in OPTION_COLUMNS if c[0] != "price_source" or any(o["price_source"] for o in options)]
    measured = any(r.get("energy_to_train_kwh") is not None for r in report.figures)
    figure_columns = [c for c in FIGURE_COLUMNS if c[0] not in ENERGY_COLUMNS or measured]
    specs = specs or {}
    charts = [{"name": name, "title": title,
               "svg_base64": base64.b64encode(report.svgs[name].encode()).decode("ascii") if name in report.svgs else "",
               "spec_json": script_json(specs[name]) if name not in report.svgs else ""}
              for name, title in chart_lib.CHARTS.items() if name in report.svgs or (live_charts and name in specs)]
    return render(
        "report.html.j2", report=report, nav=list(nav), charts=charts, options=options,
        scripts=list(live_charts) if charts and live_charts else [],
        title=f"MLPerf Training {report.round} · {data.get('benchmark_name') or report.benchmark}: scaling and cost",
        generated=f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC}", figure_columns=figure_columns,
        unpriced_columns=UNPRICED_COLUMNS, option_columns=option_columns,
        definitions=definitions(report.provisional is not None))


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
