"""The static results site: plain HTML pages, one CSS and one small JavaScript file, all relative links,
so the folder works offline from disk (file://) or from any web server. No Dagster import.

    out/index.html                                 rounds, newest first
    out/rounds/<round>/index.html                  one row per system, one column per benchmark (minutes)
    out/rounds/<round>/<benchmark>/report.html     the scaling and cost report (pipelines.lib.report.round_report)
    out/rounds/<round>/systems/<system>.html       the system's description, results and source links
    out/assets/site.css, out/assets/site.js        vendored from this package

Names of submitters, systems and benchmarks come from the archives (untrusted): every one is
HTML-escaped where shown, percent-encoded in URLs, and reduced to a safe slug in file names.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import duckdb

from pipelines.lib.io.files import owned_directory, rebased
from pipelines.lib.mlperf.rounds import ROUND_PATTERN, round_sort_key
from pipelines.lib.report import round_report

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


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


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


def _page(title: str, body: str, depth: int, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    up = "../" * depth
    nav = ""
    if crumbs:
        nav = "<nav class='crumbs'>" + " › ".join(
            f"<a href='{esc(h)}'>{esc(t)}</a>" if h else esc(t) for h, t in crumbs) + "</nav>"
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><link rel='stylesheet' href='{up}assets/site.css'></head><body>"
        f"{nav}{body}<footer>MLPerf Training results from the mlperf-warehouse, scored as MLCommons published "
        f"them. Generated {datetime.now(UTC):%Y-%m-%d %H:%M UTC}.</footer>"
        f"<script src='{up}assets/site.js'></script></body></html>"
    )


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _minutes(v) -> str:
    return f"{v:,.2f}" if v is not None else "—"


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
    results = round_report.select_columns(con, "fct_training_result", [
        "submitter", "system", "benchmark", "division", "availability", "accelerator_count", "score_minutes",
        "runs_total", "runs_dropped", "no_score_reason",
    ], "round = ?", [round_version], "submitter, system, benchmark")
    systems = round_report.select_columns(con, "dim_system", [name for name, _ in SYSTEM_FIELDS] + [
        "system", "availability_category"], "round = ?", [round_version], "submitter, system")
    return {"results": results, "systems": {(s["submitter"], s["system"]): s for s in systems}}


def benchmark_names(con) -> dict[str, str]:
    return {r["benchmark"]: r["model"] for r in round_report.select_columns(con, "dim_benchmark", ["benchmark", "model"])
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


def round_page(round_version: str, rows: list[dict], benchmarks: list[str], reports: dict[str, str],
               bench_names: dict[str, str]) -> str:
    def options(name: str, values) -> str:
        opts = "".join(f"<option value='{esc(v)}'>{esc(v)}</option>" for v in sorted(set(values), key=natural_key))
        return (f"<label>{esc(name)}<select data-filter='{esc(name)}' id='filter-{esc(name)}'>"
                f"<option value=''>all</option>{opts}</select></label>")

    filters = (
        "<div class='filters'>"
        + options("division", [r["division"] for r in rows])
        + options("availability", [r["availability"] for r in rows])
        + options("submitter", [r["submitter"] for r in rows])
        + options("accelerator", [r["accelerator"] for r in rows])
        + "<button type='button' id='reset-filters'>show all</button><span id='shown-count'></span></div>"
    )
    head = ["<th data-type='text'><button class='sort' type='button'>submitter</button></th>",
            "<th data-type='text'><button class='sort' type='button'>system</button></th>",
            "<th data-type='text'><button class='sort' type='button'>accelerator</button></th>",
            "<th data-type='number' title='number of accelerators'><button class='sort' type='button'>count</button></th>",
            "<th data-type='text'><button class='sort' type='button'>division</button></th>",
            "<th data-type='text'><button class='sort' type='button'>availability</button></th>"]
    for b in benchmarks:
        link = (f"<a class='bench' href='{esc(reports[b])}' title='scaling and cost report'>report</a>"
                if b in reports else "")
        head.append(f"<th data-type='number' data-benchmark='{esc(b)}' title='{esc(bench_names.get(b, b))}'>"
                    f"<button class='sort' type='button'>{esc(b).replace('_', '_<wbr>')}</button>{link}</th>")
    names: dict[str, int] = {}
    for r in rows:  # two systems with one name: the folder name tells them apart
        names[r["system_name"]] = names.get(r["system_name"], 0) + 1
    body = []
    for r in rows:
        attrs = " ".join(f"data-{k}='{esc(r[k])}'" for k in ("division", "availability", "submitter", "accelerator"))
        count = r["accelerator_count"] if r["accelerator_count"] is not None else ""
        cells = [f"<td>{esc(r['submitter'])}</td>",
                 f"<td data-sort='{esc(r['system_name'])}'><a href='{esc(system_href(r['submitter'], r['system']))}'>"
                 f"{esc(r['system_name'])}</a>"
                 + (f"<br><small>{esc(r['system'])}</small>" if names[r["system_name"]] > 1 else "") + "</td>",
                 f"<td>{esc(r['accelerator'])}</td>",
                 f"<td class='num' data-sort='{esc(count)}'>{esc(f'{count:,}' if count != '' else '')}</td>",
                 f"<td>{esc(r['division'])}</td>", f"<td>{esc(r['availability'])}</td>"]
        for b in benchmarks:
            res = r["scores"].get(b)
            if res is None:
                cells.append("<td class='empty' data-sort=''></td>")
            elif res["score_minutes"] is None:
                cells.append(f"<td class='empty' data-sort='' title='{esc(res.get('no_score_reason') or 'no score')}'>"
                             "no score</td>")
            else:
                cells.append(f"<td class='num' data-sort='{res['score_minutes']:.6f}'>{_minutes(res['score_minutes'])}</td>")
        body.append(f"<tr {attrs}>" + "".join(cells) + "</tr>")
    return (
        f"<h1>MLPerf Training {esc(round_version)}: results</h1>"
        "<p class='lead'>One row per system, one column per benchmark: the score as MLCommons published it, in minutes to train "
        "(lower is better). Filter by division, availability, submitter or accelerator; click a column to sort. "
        "Each benchmark's <em>report</em> has its scaling and cost charts.</p>"
        + filters
        + "<table class='results' id='results'><thead><tr>" + "".join(head) + "</tr></thead><tbody>"
        + "".join(body) + "</tbody></table>"
    )


def system_page(round_version: str, key: tuple[str, str], info: dict, results: list[dict], reports: dict[str, str],
                acc_names: dict[str, str]) -> str:
    submitter, system = key
    name = info.get("system_name") or system
    links = github_links(round_version, submitter, system)
    facts = []
    for field_name, label in SYSTEM_FIELDS:
        value = info.get(field_name)
        if field_name == "accelerator" and value:
            value = f"{acc_names.get(value, value)} ({value})"
        if value not in (None, ""):
            facts.append(f"<dt>{esc(label)}</dt><dd>{esc(value)}</dd>")
    facts.append(f"<dt>results folder</dt><dd><code>{esc(system)}</code></dd>")
    link_html = ""
    if links:
        link_html = (
            "<h2>Files in the MLCommons repository</h2><ul>"
            f"<li><a href='{esc(links['results'])}' id='link-results'>result logs</a> "
            f"<small>{esc(links['results'])}</small></li>"
            f"<li><a href='{esc(links['systems'])}' id='link-systems'>system description (JSON)</a> "
            f"<small>{esc(links['systems'])}</small></li></ul>"
        )
    rows = []
    for r in sorted(results, key=lambda r: str(r["benchmark"])):
        bench = esc(r["benchmark"])
        if r["benchmark"] in reports:
            bench = f"<a href='../{esc(reports[r['benchmark']])}'>{bench}</a>"
        logs = ""
        if links:
            logs = f"<a href='{esc(links['results'] + '/' + quote(str(r['benchmark']), safe=''))}'>logs</a>"
        runs = "" if r.get("runs_total") is None else f"{r['runs_total']}"
        dropped = "" if r.get("runs_dropped") is None else f"{r['runs_dropped']}"
        note = esc(r.get("no_score_reason") or "")
        rows.append(f"<tr><td>{bench}</td><td class='num'>{_minutes(r['score_minutes'])}</td>"
                    f"<td class='num'>{runs}</td><td class='num'>{dropped}</td><td>{logs}</td><td>{note}</td></tr>")
    return (
        f"<h1>{esc(name)}</h1><p class='lead'>{esc(submitter)} · MLPerf Training {esc(round_version)}</p>"
        + link_html
        + f"<h2>Results</h2><table><thead><tr><th>benchmark (scaling and cost report)</th><th>minutes</th><th>runs</th>"
        f"<th>runs dropped</th><th>logs</th><th>why no score</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<h2>Description</h2><dl class='facts'>{''.join(facts)}</dl>"
    )


def index_page(summaries: list[dict]) -> str:
    cards = []
    for s in summaries:
        cards.append(
            f"<div class='card'><h2><a href='{esc(s['href'])}'>MLPerf Training {esc(s['round'])}</a></h2>"
            f"<p>{s['systems']:,} systems · {s['submitters']:,} submitters</p>"
            f"<p>{s['scored']:,} scored results in {s['benchmarks']:,} benchmarks</p>"
            "<p class='muted'>" + ", ".join(
                f"<a href='{esc(s['reports'][b])}'>{esc(b)}</a>" if b in s["reports"] else esc(b)
                for b in s["benchmark_list"]) + "</p></div>")
    body = ("<h1>MLPerf Training results</h1>"
            "<p class='lead'>Every round in the warehouse, scored as MLCommons published them "
            "(each round by its own rules release). "
            "Each round has a table of systems and benchmarks with filters, a scaling and cost report per "
            "benchmark (the links below), and a page per system with links to its files at MLCommons.</p>")
    if not cards:
        body += "<p><em>No rounds in the warehouse yet.</em></p>"
    return body + "<div class='cards' id='rounds'>" + "".join(cards) + "</div>"


def copy_assets(out_dir: Path) -> None:
    target = out_dir / "assets"
    target.mkdir(parents=True, exist_ok=True)
    static = resources.files("pipelines.lib.report.site") / "static"
    for name in ("site.js", "site.css"):
        (target / name).write_bytes((static / name).read_bytes())


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
    missing = sorted(set(rounds or ()) - set(available))
    if missing:
        site.notes.append(f"not in the warehouse: {', '.join(missing)}")
    site.rounds = sorted(wanted, key=round_sort_key, reverse=True)
    acc_names = round_report.accelerator_names(con)
    bench_names = benchmark_names(con)
    summaries = []
    for round_version in site.rounds:
        rdir = out_dir / "rounds" / slug(round_version)
        data = load_round(con, round_version)
        rows = _system_rows(data, acc_names)
        benchmarks = sorted({r["benchmark"] for r in data["results"] if r["benchmark"]})
        scored_benchmarks = sorted({r["benchmark"] for r in data["results"] if r["score_minutes"] is not None})
        hrefs: dict[str, str] = {}
        if reports:
            for b in scored_benchmarks:
                href = f"{slug(b)}/report.html"
                rep = round_report.build_report(con, round_version, b, rdir / slug(b), nav=[
                    ("../../../index.html", "All rounds"), ("../index.html", f"{round_version} results")])
                site.reports[(round_version, b)] = rep.html
                hrefs[b] = href
        crumbs = [("../../index.html", "All rounds"), ("", round_version)]
        _write(rdir / "index.html", _page(
            f"MLPerf Training {round_version} results", round_page(round_version, rows, benchmarks, hrefs, bench_names),
            2, crumbs))
        by_system: dict[tuple[str, str], list[dict]] = {}
        for r in data["results"]:
            by_system.setdefault((r["submitter"], r["system"]), []).append(r)
        for key, results in by_system.items():
            info = data["systems"].get(key) or {"submitter": key[0]}
            name = info.get("system_name") or key[1]
            _write(rdir / system_href(*key), _page(
                f"{name} · MLPerf Training {round_version}",
                system_page(round_version, key, info, results, hrefs, acc_names), 3,
                [("../../../index.html", "All rounds"), ("../index.html", round_version), ("", name)]))
            site.system_pages += 1
        summaries.append({
            "round": round_version, "href": f"rounds/{slug(round_version)}/index.html", "systems": len(rows),
            "submitters": len({r["submitter"] for r in rows}), "benchmarks": len(scored_benchmarks),
            "benchmark_list": scored_benchmarks,
            "reports": {b: f"rounds/{slug(round_version)}/{h}" for b, h in hrefs.items()},
            "scored": sum(1 for r in data["results"] if r["score_minutes"] is not None),
        })
    _write(site.index, _page("MLPerf Training results", index_page(summaries), 0))
    return site
