"""The static results site: plain HTML pages, one CSS and one small JavaScript file, all relative links,
so the folder works offline from disk (file://) or from any web server. No Dagster import. This module
assembles what each page shows; the pages are Jinja2 templates (`templates/site_*.html.j2`, autoescaped).

    out/index.html                                 rounds, newest first
    out/rounds/<round>/index.html                  one row per system, one column per benchmark (minutes)
    out/rounds/<round>/<benchmark>/report.html     the scaling and cost report (pipelines.lib.report.round_report)
    out/rounds/<round>/systems/<system>.html       the system's description, results and source links
    out/hpc/<round>/index.html                     an MLPerf HPC round: strong scores and weak throughput
    out/inference/<round>/index.html               an MLPerf Inference round: every valid result, priced per million
    out/assets/site.css, out/assets/site.js        vendored from this package

Names of submitters, systems and benchmarks come from the archives (untrusted): every one is
HTML-escaped where shown, percent-encoded in URLs, and reduced to a safe slug in file names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import duckdb
from markupsafe import Markup, escape

from pipelines.lib.io.files import owned_directory, rebased
from pipelines.lib.io.jsonsafe import dumps_strict
from pipelines.lib.mlperf.rounds import ROUND_PATTERN, round_sort_key
from pipelines.lib.mlperf.suites import HPC, TRAINING
from pipelines.lib.report.figures import accelerator_names, provisional_rounds, select_columns
from pipelines.lib.report.inference import inference_groups, price_chart
from pipelines.lib.report.render import minutes, render
from pipelines.lib.report.round_report import build_report, script_json

GITHUB = "https://github.com/mlcommons/training_results_{round}"
SYSTEM_FIELDS = [
    ("system_name", "name"), ("submitter", "submitter"), ("division", "division"),
    ("availability", "availability"), ("accelerator_model_name", "accelerator (as declared)"),
    ("accelerator", "accelerator key"), ("accelerators_per_node", "accelerators per node"),
    ("number_of_nodes", "nodes"), ("accelerator_count", "accelerators"),
    ("host_processor_model_name", "host processor"), ("host_processors_per_node", "host processors per node"),
    ("framework", "framework"), ("source_file", "systems file"),
]


@dataclass
class Site:
    out_dir: Path
    index: Path
    rounds: list[str] = field(default_factory=list)
    reports: dict[tuple[str, str], Path] = field(default_factory=dict)
    system_pages: int = 0
    notes: list[str] = field(default_factory=list)
    hpc_rounds: list[str] = field(default_factory=list)
    inference_rounds: list[str] = field(default_factory=list)


def slug(text: str) -> str:
    """A file name safe on every OS for an untrusted name; a short hash keeps different names apart."""
    text = str(text)
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"
    if clean != text or len(clean) > 80:
        clean = f"{clean[:80]}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return clean


def github_links(round_version: str, submitter: str, system: str) -> dict[str, str]:
    """Where the system's files are in the `mlcommons/training_results_vX.Y` repository."""
    if not ROUND_PATTERN.match(round_version or ""):
        return {}
    repo = GITHUB.format(round=round_version)
    sub, sys_ = quote(submitter, safe=""), quote(system, safe="")
    return {
        "results": f"{repo}/tree/main/{sub}/results/{sys_}",
        "systems": f"{repo}/blob/main/{sub}/systems/{sys_}.json",
    }


def _page(template: str, title: str, depth: int, crumbs: Sequence[tuple[str, str]] = (),
          provisional: str | None = None, **context) -> str:
    """A page of the site: `template` (extending site_page.html.j2) with its title, breadcrumbs and the
    relative path up to the site's root; `provisional`: why the scores it shows are judged by rules not their
    round's own (a notice at the top says so)."""
    return render(template, title=title, up="../" * depth, crumbs=list(crumbs), provisional=provisional,
                  generated=f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC}", **context)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _availability(row: dict) -> str:
    """The availability a reader filters on: the normalized category when the warehouse has it."""
    cat = row.get("availability_category")
    if cat:
        return str(cat)
    return str(row.get("availability") or "unknown")


def natural_key(text) -> list:
    """'tpu-512' before 'tpu-1024': digit runs compare as numbers."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(text).lower())]


def load_round(con, round_version: str) -> dict:
    results = select_columns(con, "fct_training_result", [
        "submitter", "system", "benchmark", "division", "availability", "accelerator_count", "score_minutes",
        "runs_total", "runs_dropped", "no_score_reason", "energy_to_train_kwh",
    ], "round = ?", [round_version], "submitter, system, benchmark")
    systems = select_columns(con, "dim_system", [name for name, _ in SYSTEM_FIELDS] + [
        "system", "availability_category"], "round = ?", [round_version], "submitter, system")
    return {"results": results, "systems": {(s["submitter"], s["system"]): s for s in systems}}


def benchmark_names(con) -> dict[str, str]:
    return {r["benchmark"]: r["model"] for r in select_columns(con, "dim_benchmark", ["benchmark", "model"])
            if r["benchmark"] and r["model"]}


def _system_rows(data: dict, acc_names: dict[str, str]) -> list[dict]:
    """One row per (submitter, system) with results in the round, scores by benchmark."""
    rows: dict[tuple[str, str], dict] = {}
    for r in data["results"]:
        key = (r["submitter"], r["system"])
        info = data["systems"].get(key) or {}
        row = rows.setdefault(key, {
            "submitter": r["submitter"], "system": r["system"],
            "system_name": (info.get("system_name") or r["system"]),
            "division": r["division"] or info.get("division") or "unknown",
            "availability": _availability(info if info else {"availability": r["availability"]}),
            "accelerator": acc_names.get(info.get("accelerator") or "", info.get("accelerator_model_name")
                                         or "unknown"),
            "accelerator_count": r["accelerator_count"] if r["accelerator_count"] is not None
            else info.get("accelerator_count"),
            "scores": {},
        })
        row["scores"][r["benchmark"]] = r
    return sorted(rows.values(), key=lambda r: (natural_key(r["submitter"]), natural_key(r["system_name"])))


def system_href(submitter: str, system: str) -> str:
    return f"systems/{slug(submitter)}--{slug(system)}.html"


def round_context(round_version: str, rows: list[dict], benchmarks: list[str], reports: dict[str, str],
                  bench_names: dict[str, str]) -> dict:
    """What the round's table shows: filters, one column per benchmark, one row per system."""
    filters = [(name, sorted({r[name] for r in rows}, key=natural_key))
               for name in ("division", "availability", "submitter", "accelerator")]
    columns = [{"name": b, "title": bench_names.get(b, b), "report": reports.get(b),
                "label": escape(b).replace("_", Markup("_<wbr>"))} for b in benchmarks]
    names: dict[str, int] = {}
    for r in rows:  # two systems with one name: the folder name tells them apart
        names[r["system_name"]] = names.get(r["system_name"], 0) + 1
    shown = []
    for r in rows:
        count = r["accelerator_count"]
        cells = []
        for b in benchmarks:
            res = r["scores"].get(b)
            if res is None:
                cells.append({"empty": True, "text": "", "title": ""})
            elif res["score_minutes"] is None:
                cells.append({"empty": True, "text": "no score", "title": res.get("no_score_reason") or "no score"})
            else:
                cells.append({"empty": False, "sort": f"{res['score_minutes']:.6f}", "text": minutes(res["score_minutes"])})
        shown.append(r | {"href": system_href(r["submitter"], r["system"]), "show_folder": names[r["system_name"]] > 1,
                          "count_sort": "" if count is None else count,
                          "count_text": "" if count is None else f"{count:,}", "cells": cells})
    return {"round": round_version, "filters": filters, "benchmarks": columns, "rows": shown}


def system_context(round_version: str, key: tuple[str, str], info: dict, results: list[dict], reports: dict[str, str],
                   acc_names: dict[str, str]) -> dict:
    """What a system's page shows: its description, results and links to its files at MLCommons."""
    submitter, system = key
    links = github_links(round_version, submitter, system)
    facts = []
    for field_name, label in SYSTEM_FIELDS:
        value = info.get(field_name)
        if field_name == "accelerator" and value:
            value = f"{acc_names.get(value, value)} ({value})"
        if value not in (None, ""):
            facts.append((label, value))
    rows = [r | {"report": f"../{reports[r['benchmark']]}" if r["benchmark"] in reports else None,
                 "logs": f"{links['results']}/{quote(str(r['benchmark']), safe='')}" if links else None}
            for r in sorted(results, key=lambda r: str(r["benchmark"]))]
    return {"name": info.get("system_name") or system, "submitter": submitter, "system": system,
            "round": round_version, "links": links, "facts": facts, "results": rows,
            "measured": any(r.get("energy_to_train_kwh") is not None for r in rows)}


def copy_assets(out_dir: Path) -> None:
    target = out_dir / "assets"
    target.mkdir(parents=True, exist_ok=True)
    static = resources.files("pipelines.lib.report.site") / "static"
    for name in ("site.js", "site.css", "charts.js"):
        (target / name).write_bytes((static / name).read_bytes())
    # Vega, Vega-Lite and Vega-Embed, as the pinned vl-convert package bundles them: the report pages draw
    # their charts with it, offline.
    import vl_convert as vlc

    (target / "vega.js").write_text(vlc.javascript_bundle(), encoding="utf-8")


SITE_MARKER = ".mlperf-warehouse-site"  # in every site folder: only a folder holding it is ever replaced


def write_site(con: duckdb.DuckDBPyConnection, out: Path, rounds: Sequence[str] | None = None,
               reports: bool = True) -> Site:
    """Build the whole site beside `out` and put it in `out`'s place: `out` must be missing, empty or an
    earlier site (its SITE_MARKER); nothing else there is touched. The Site's paths are those under `out`."""
    with owned_directory(out, SITE_MARKER, "site") as work:
        site = build_site(con, work, rounds, reports)
    site.out_dir, site.index = Path(out).resolve(), rebased(site.index, work, out)
    site.reports = {key: rebased(path, work, out) for key, path in site.reports.items()}
    return site


def build_site(con: duckdb.DuckDBPyConnection, out_dir: Path, rounds: Sequence[str] | None = None,
               reports: bool = True) -> Site:
    """Write the whole site into the empty folder `out_dir` (write_site puts it in place)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    copy_assets(out_dir)
    site = Site(out_dir, out_dir / "index.html")
    available = [r for (r,) in con.execute("select distinct round from fct_training_result").fetchall() if r]
    wanted = available if not rounds else [r for r in available if r in set(rounds)]
    missing = sorted(set(rounds or ()) - set(available) - set(suite_rounds(con, "fct_hpc_result"))
                     - set(suite_rounds(con, "fct_inference_result")))
    if missing:
        site.notes.append(f"not in the warehouse: {', '.join(missing)}")
    site.rounds = sorted(wanted, key=round_sort_key, reverse=True)
    acc_names = accelerator_names(con)
    bench_names = benchmark_names(con)
    provisional = provisional_rounds(con)
    summaries = []
    for round_version in site.rounds:
        why = provisional.get((TRAINING.name, round_version))
        rdir = out_dir / "rounds" / slug(round_version)
        data = load_round(con, round_version)
        rows = _system_rows(data, acc_names)
        benchmarks = sorted({r["benchmark"] for r in data["results"] if r["benchmark"]})
        scored_benchmarks = sorted({r["benchmark"] for r in data["results"] if r["score_minutes"] is not None})
        hrefs: dict[str, str] = {}
        if reports:
            for b in scored_benchmarks:
                href = f"{slug(b)}/report.html"
                rep = build_report(con, round_version, b, rdir / slug(b), png=False, nav=[
                    ("../../../index.html", "All rounds"), ("../index.html", f"{round_version} results")],
                    live_charts=("../../../assets/vega.js", "../../../assets/charts.js"))
                site.reports[(round_version, b)] = rep.html
                hrefs[b] = href
        crumbs = [("../../index.html", "All rounds"), ("", round_version)]
        _write(rdir / "index.html", _page(
            "site_round.html.j2", f"MLPerf Training {round_version} results", 2, crumbs, provisional=why,
            **round_context(round_version, rows, benchmarks, hrefs, bench_names)))
        by_system: dict[tuple[str, str], list[dict]] = {}
        for r in data["results"]:
            by_system.setdefault((r["submitter"], r["system"]), []).append(r)
        for key, results in by_system.items():
            info = data["systems"].get(key) or {"submitter": key[0]}
            name = info.get("system_name") or key[1]
            _write(rdir / system_href(*key), _page(
                "site_system.html.j2", f"{name} · MLPerf Training {round_version}", 3,
                [("../../../index.html", "All rounds"), ("../index.html", round_version), ("", name)],
                provisional=why, **system_context(round_version, key, info, results, hrefs, acc_names)))
            site.system_pages += 1
        summaries.append({
            "round": round_version, "href": f"rounds/{slug(round_version)}/index.html", "systems": len(rows),
            "submitters": len({r["submitter"] for r in rows}), "benchmarks": len(scored_benchmarks),
            "benchmark_list": scored_benchmarks,
            "reports": {b: f"rounds/{slug(round_version)}/{h}" for b, h in hrefs.items()},
            "scored": sum(1 for r in data["results"] if r["score_minutes"] is not None), "provisional": why,
        })
    hpc = [hpc_round_page(con, out_dir, r, acc_names, provisional.get((HPC.name, r)))
           for r in suite_rounds(con, "fct_hpc_result", rounds)]
    site.hpc_rounds = [h["round"] for h in hpc]
    inference = [inference_round_page(con, out_dir, r, acc_names) for r in suite_rounds(con, "fct_inference_result", rounds)]
    site.inference_rounds = [i["round"] for i in inference]
    _write(site.index, _page("site_index.html.j2", "MLPerf results", 0, summaries=summaries, hpc=hpc,
                             inference=inference))
    return site


HPC_STRONG_COLUMNS = [("submitter", "submitter"), ("system_name", "system"), ("accelerator", "accelerator"),
                      ("accelerator_count", "count"), ("division", "division"), ("benchmark", "benchmark"),
                      ("score_minutes", "minutes"), ("convergence_scaling_efficiency", "scaling efficiency vs the smallest"),
                      ("cost_to_train_usd", "cost at today's price"), ("no_score_reason", "why no score")]
HPC_WEAK_COLUMNS = [("submitter", "submitter"), ("system_name", "system"), ("accelerator", "accelerator"),
                    ("benchmark", "benchmark"), ("number_of_models", "models"), ("instance_scale", "accelerators per model"),
                    ("time_to_train_all_minutes", "minutes for all"), ("models_per_minute", "models per minute"),
                    ("throughput_null_reason", "why no throughput")]


def suite_rounds(con: duckdb.DuckDBPyConnection, table: str, wanted: Sequence[str] | None = None) -> list[str]:
    """The rounds of a suite's result table (`fct_hpc_result`, ...) in the warehouse (those of `wanted` when
    given), newest first."""
    try:
        found = [r for (r,) in con.execute(f"select distinct round from {table}").fetchall() if r]
    except duckdb.CatalogException:  # a warehouse published before the suite was loaded
        return []
    return sorted((r for r in found if not wanted or r in set(wanted)), key=round_sort_key, reverse=True)


def hpc_round_page(con: duckdb.DuckDBPyConnection, out_dir: Path, round_version: str, acc_names: dict[str, str],
                   provisional: str | None = None) -> dict:
    """Write `hpc/<round>/index.html` (`provisional`: why its rules are not its own); return the round's index
    card."""
    base = """
        select r.*,
            coalesce(r.system_name, r.system) as system_label, c.cost_to_train_usd, c.no_cost_reason,
            case when not s.is_base then s.convergence_scaling_efficiency end as convergence_scaling_efficiency,
            case when s.is_base and s.family_size = 1 then 'alone in its family: nothing to compare'
                 when s.is_base then 'the family''s smallest: the base' end as scaling_note
        from fct_hpc_result as r
        left join mart_hpc_strong_scaling as s using (round, submitter, system, benchmark)
        left join mart_hpc_cost as c using (round, submitter, system, benchmark)
        where r.round = ? and r.scale = ? order by r.benchmark, r.submitter, r.system"""
    tables = {}
    for scale in ("strong", "weak"):
        cursor = con.execute(base, [round_version, scale])
        names = [d[0] for d in cursor.description]
        tables[scale] = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        for row in tables[scale]:
            row["accelerator"] = acc_names.get(row["accelerator"]) or row["accelerator_model_name"]
            row["system_name"] = row["system_label"]
    refs = sorted({r["ruleset_ref"] for rows in tables.values() for r in rows if r["ruleset_ref"]})
    href = f"hpc/{slug(round_version)}/index.html"
    _write(out_dir / href, _page(
        "site_hpc_round.html.j2", f"MLPerf HPC {round_version} results", 2,
        [("../../index.html", "All rounds"), ("", f"HPC {round_version}")], round=round_version,
        ruleset_ref=", ".join(refs) or "none", strong=tables["strong"], weak=tables["weak"],
        strong_columns=HPC_STRONG_COLUMNS, weak_columns=HPC_WEAK_COLUMNS, provisional=provisional))
    return {"round": round_version, "href": href, "provisional": provisional,
            "strong": sum(1 for r in tables["strong"] if r["score_minutes"] is not None),
            "weak": sum(1 for r in tables["weak"] if r["models_per_minute"] is not None),
            "systems": len({(r["submitter"], r["system"]) for rows in tables.values() for r in rows})}


def inference_round_page(con: duckdb.DuckDBPyConnection, out_dir: Path, round_version: str,
                         acc_names: dict[str, str]) -> dict:
    """Write `inference/<round>/index.html`: per model and scenario, every valid result, cheapest first."""
    groups = inference_groups(con, round_version, acc_names)
    for group in groups:
        group["anchor"] = slug(group["key"])
        spec = price_chart(group)
        group["spec_json"] = script_json(dumps_strict(spec)) if spec else ""
    href = f"inference/{slug(round_version)}/index.html"
    _write(out_dir / href, _page(
        "site_inference_round.html.j2", f"MLPerf Inference {round_version} results, priced", 2,
        [("../../index.html", "All rounds"), ("", f"Inference {round_version}")], round=round_version,
        groups=groups, live_charts=["../../assets/vega.js", "../../assets/charts.js"]))
    return {"round": round_version, "href": href, "results": sum(len(g["rows"]) for g in groups),
            "priced": sum(1 for g in groups for r in g["rows"] if r["usd_per_million"] is not None),
            "models": len({g["model"] for g in groups})}
