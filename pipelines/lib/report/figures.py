"""The rows behind a benchmark's report, read from a read-only warehouse connection, and what is computed
from them: the cheapest bookable cost per system and cloud, the figures table, the findings sentences,
display names and one colour per (submitter, accelerator) family. No HTML and no charts here.

Columns are read by name and only when the table has them, so marts that gain columns (or lack optional
ones) still work.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from pipelines.lib.warehouse.query import fetch_dicts

# 20 colours of high contrast (Kelly's list without white and black, strongest first, two near-twins
# swapped for navy and teal; every pair at least 25 CIELAB ΔE apart): up to 20 (submitter,
# accelerator) families each get their own colour.
PALETTE = [
    "#0067A5", "#F38400", "#008856", "#BE0032", "#875692", "#882D17", "#E68FAC", "#848482", "#8DB600", "#A1CAF1",
    "#00A5A5", "#000080", "#C2B280", "#B3446C", "#2B3D26", "#E25822", "#654522", "#F99379", "#DCD300", "#5A5A00",
]

CLOUD_NAMES = {"aws": "AWS", "azure": "Azure", "gcp": "Google Cloud", "oci": "Oracle Cloud"}



def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    """The columns of `table` (empty if there is no such table), from binding a query of it: a query of the
    information schema would read the whole catalog each time."""
    try:
        return {d[0] for d in con.execute(f"select * from {table} limit 0").description}
    except duckdb.CatalogException:
        return set()


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


def cloud_name(provider: str | None) -> str:
    """The cloud as people call it (AWS, Google Cloud, ...); the warehouse's provider names are the clouds'."""
    return CLOUD_NAMES.get((provider or "").lower(), provider or "?")


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


def display_names(keys: Sequence[tuple[str, str]], sysinfo: dict) -> dict[tuple[str, str], str]:
    """(submitter, system) -> system_name, with the folder name added where two systems share a name."""
    base = {k: ((sysinfo.get(k) or {}).get("system_name") or k[1]).strip() or k[1] for k in keys}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name] = counts.get(name, 0) + 1
    return {k: (n if counts[n] == 1 else f"{n} [{k[1]}]") for k, n in base.items()}


# --- the figures -------------------------------------------------------------------------------

def provisional_rounds(con) -> dict[tuple[str, str], str]:
    """(suite, round) → why the round's scores are provisional (`dim_rules_release`: the rules that judged it
    are not its own); a round judged by its own rules is absent. Every page showing its scores says so."""
    try:
        return {(suite, round_version): why for suite, round_version, why in con.execute(
            "select suite, round, why from dim_rules_release where provisional").fetchall()}
    except duckdb.CatalogException:  # a warehouse published before the table
        return {}


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
    energy = select_columns(con, "mart_energy", ["submitter", "system", "energy_to_train_kwh",
                                                 "average_power_per_accelerator_w"],
                            "round = ? and benchmark = ?", [round_version, benchmark])
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
        key = (r["submitter"], r["system"], r["provider"])
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
    return {"scaling": scaling, "costs": costs, "bookable": list(cheapest.values()), "utilization": utilization,
            "results": results, "unpriced": unpriced, "systems": sysinfo, "energy": energy,
            "accelerator_names": accelerator_names(con), "benchmark_name": benchmark_name(con, benchmark)}


def figures_table(data: dict) -> list[dict]:
    """One row per scored system: scores, scaling vs the family base, MFU, cheapest bookable cost."""
    mfu = {(r["submitter"], r["system"]): r["mfu"] for r in data["utilization"]}
    energy = {(r["submitter"], r["system"]): r for r in data.get("energy", [])}
    best: dict[tuple, dict] = {}
    native: dict[tuple, dict] = {}
    for r in data["bookable"]:
        key = (r["submitter"], r["system"])
        if key not in best or r["cost_to_train_usd"] < best[key]["cost_to_train_usd"]:
            best[key] = r
        if r["is_native_cloud"] and (key not in native or r["cost_to_train_usd"] < native[key]["cost_to_train_usd"]):
            native[key] = r
    acc_names = data.get("accelerator_names", {})
    names = display_names([(r["submitter"], r["system"]) for r in data["scaling"]], data.get("systems", {}))
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
            "cheapest_bookable_usd": b["cost_to_train_usd"] if b else None,
            "cheapest_bookable_at": f"{cloud_name(b['provider'])} {b['region']}" if b else None,
            "own_cloud_bookable_usd": n["cost_to_train_usd"] if n else None,
            "energy_to_train_kwh": (energy.get(key) or {}).get("energy_to_train_kwh"),
            "average_power_per_accelerator_w": (energy.get(key) or {}).get("average_power_per_accelerator_w"),
        })
    return rows


def money(v: float | None) -> str:
    return "—" if v is None else f"${v:,.2f}"


def count_text(n) -> str:
    return f"{int(n):,}" if n is not None else "?"


def compute_findings(data: dict, benchmark: str) -> list[str]:
    """The headline figures, as sentences, from the same rows the charts draw."""
    acc_names = data.get("accelerator_names", {})
    names = display_names(
        list({(r["submitter"], r["system"]) for r in data["scaling"] + data["bookable"] + data["results"]}),
        data.get("systems", {}))
    out: list[str] = []
    fastest = min((r for r in data["results"] if r["score_minutes"]), key=lambda r: r["score_minutes"], default=None)
    if fastest:
        key = (fastest["submitter"], fastest["system"])
        accelerator = acc_names.get(fastest["accelerator"], fastest["accelerator"])
        out.append(f"Fastest: {fastest['submitter']} {names.get(key, fastest['system'])}, "
                   f"{count_text(fastest['accelerator_count'])}× {accelerator}, "
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
                       f"{best[measure]:.0%} of linear from {count_text(best.get('base_accelerator_count'))} to "
                       f"{count_text(best['accelerator_count'])} accelerators ({best['size_ratio']:.1f}× the hardware{extra}).")
    if data["bookable"]:
        cheapest = min(data["bookable"], key=lambda r: r["cost_to_train_usd"])
        key = (cheapest["submitter"], cheapest["system"])
        accelerator = acc_names.get(cheapest["accelerator"], cheapest["accelerator"])
        out.append(f"Cheapest to train: {cheapest['submitter']} {names.get(key, cheapest['system'])}, "
                   f"{count_text(cheapest['accelerator_count'])}× {accelerator}: "
                   f"{money(cheapest['cost_to_train_usd'])} on {cloud_name(cheapest['provider'])} "
                   f"({cheapest['region']}, {cheapest['pricing_model']} price).")
        # performance per dollar between the two best accelerator families, each at its cheapest system
        per_acc: dict[str, dict] = {}
        for r in data["bookable"]:
            if r["accelerator"] not in per_acc or r["cost_to_train_usd"] < per_acc[r["accelerator"]]["cost_to_train_usd"]:
                per_acc[r["accelerator"]] = r
        ranked = sorted(per_acc.values(), key=lambda r: r["cost_to_train_usd"])
        if len(ranked) >= 2:
            a, b = ranked[0], ranked[1]
            ratio = b["cost_to_train_usd"] / a["cost_to_train_usd"]
            label_a = f"{acc_names.get(a['accelerator'], a['accelerator'])} ({count_text(a['accelerator_count'])} accelerators)"
            label_b = f"{acc_names.get(b['accelerator'], b['accelerator'])} ({count_text(b['accelerator_count'])} accelerators)"
            verdict = (f"trains {data['benchmark_name']} {ratio:.2f}× cheaper than" if ratio >= 1.005
                       else f"trains {data['benchmark_name']} at about the same cost as")
            out.append(f"{label_a} {verdict} {label_b} at bookable list prices "
                       f"({money(a['cost_to_train_usd'])} vs {money(b['cost_to_train_usd'])}: "
                       f"{ratio:.2f}× the performance per dollar; the two cheapest accelerator models).")
    if data["unpriced"]:
        count = len(data["unpriced"])
        out.append(f"{count} scored system{' has' if count == 1 else 's have'} no bookable price and "
                   f"{'is' if count == 1 else 'are'} listed under “Systems without a price”.")
    return out


def family_of(r: dict, acc_names: dict[str, str]) -> str:
    """The (submitter, accelerator) family a row's colour is keyed by."""
    return family_label(r["submitter"], r["accelerator"], acc_names)
