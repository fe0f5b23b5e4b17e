"""`mlperf-warehouse compare SYSTEM_A SYSTEM_B --benchmark B --round R`: side-by-side figures."""

from __future__ import annotations

import argparse

from pipelines.commands import add_warehouse_dir, warehouse_base

EXAMPLES = """examples:
  mlperf-warehouse compare cloud-tpu-v5p-4096-maxtext cloud-tpu-trillium-1024-maxtext --benchmark gpt3 --round v4.1
  mlperf-warehouse query "select system, system_name from mart_scaling_efficiency where round = 'v4.1' and benchmark = 'gpt3'"
                                                 # the systems there are to compare"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="compare two systems' scaling, cost and MFU figures",
        description="Two systems of one round and benchmark side by side: score, scaling, MFU and cost to train.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("system_a", help="system (results folder name) or its system_name, e.g. cloud-tpu-v5p-4096-maxtext")
    p.add_argument("system_b", help="the system to compare it with (B / A ratios are shown)")
    p.add_argument("--benchmark", required=True, metavar="NAME", help="e.g. gpt3")
    p.add_argument("--round", required=True, metavar="V", help="a round loaded in the warehouse, e.g. v4.1")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def _find(con, round_version: str, benchmark: str, name: str) -> dict:
    from pipelines.lib.warehouse.query import fetch_dicts

    rows = fetch_dicts(
        con,
        """
        select r.*, u.mfu, u.peak_dense_bf16_flops
        from mart_scaling_efficiency as r
        left join mart_utilization as u using (round, submitter, system, benchmark)
        where r.round = ? and r.benchmark = ? and (lower(r.system) = lower(?) or lower(r.system_name) = lower(?))
        """,
        [round_version, benchmark, name, name],
    )
    if not rows:
        from pipelines.commands import unknown

        systems = [s for (s,) in con.execute(
            "select distinct system from mart_scaling_efficiency where round = ? and benchmark = ? order by 1",
            [round_version, benchmark]).fetchall()]
        raise unknown("system", name, systems, f"(systems with a scored {benchmark} result in {round_version})")
    if len(rows) > 1:
        raise ValueError(f"{name!r} is ambiguous in {round_version}: submitted by "
                         + ", ".join(sorted(r["submitter"] for r in rows)))
    return rows[0]


def _costs(con, row: dict) -> tuple[dict | None, dict | None]:
    """(cheapest bookable price option, cheapest bookable option on the submitter's own cloud): the
    headline rule, mart_cost_to_train.is_bookable."""
    from pipelines.lib.warehouse.query import fetch_dicts

    rows = fetch_dicts(
        con,
        """
        select provider, region, sku, pricing_model, price_per_accelerator_hour_usd, cost_to_train_usd, is_native_cloud
        from mart_cost_to_train
        where round = ? and submitter = ? and system = ? and benchmark = ?
            and is_bookable
        order by cost_to_train_usd, provider, region, sku
        """,
        [row["round"], row["submitter"], row["system"], row["benchmark"]],
    )
    native = [r for r in rows if r["is_native_cloud"]]
    return (rows[0] if rows else None), (native[0] if native else None)


def comparison_rows(a: dict, b: dict, cost_a, cost_b) -> list[tuple[str, str, str, str]]:
    from pipelines.lib.report import metrics

    def num(v, fmt="{:,.3f}"):
        return "—" if v is None else fmt.format(v)

    def pct(v):
        return "—" if v is None else f"{v:.1%}"

    def ratio(x, y):
        return "—" if not x or not y else f"{y / x:.2f}×"

    best_a, native_a = cost_a
    best_b, native_b = cost_b
    rows = [
        ("submitter", a["submitter"], b["submitter"], ""),
        ("accelerator", a["accelerator"], b["accelerator"], ""),
        ("accelerators", str(a["accelerator_count"]), str(b["accelerator_count"]),
         ratio(a["accelerator_count"], b["accelerator_count"])),
        ("score (minutes)", num(a["score_minutes"]), num(b["score_minutes"]), ratio(a["score_minutes"], b["score_minutes"])),
        ("scaling base", f"{a['base_system']} ({a['base_accelerator_count']})",
         f"{b['base_system']} ({b['base_accelerator_count']})", ""),
        ("speedup vs base", num(a["speedup"]), num(b["speedup"]), ""),
        ("convergence scaling eff.", pct(a["convergence_scaling_efficiency"]), pct(b["convergence_scaling_efficiency"]), ""),
        ("throughput scaling eff.", pct(a["throughput_scaling_efficiency"]), pct(b["throughput_scaling_efficiency"]), ""),
        ("scaling kind", a["scaling_kind"] or "—", b["scaling_kind"] or "—", ""),
        ("MFU", pct(a["mfu"]), pct(b["mfu"]), ratio(a["mfu"], b["mfu"])),
    ]
    for label, ca, cb in (("cheapest bookable", best_a, best_b), ("own-cloud bookable", native_a, native_b)):
        rows.append((
            f"{label} cost (USD)",
            "—" if ca is None else f"${ca['cost_to_train_usd']:,.0f} ({ca['provider']} {ca['region']})",
            "—" if cb is None else f"${cb['cost_to_train_usd']:,.0f} ({cb['provider']} {cb['region']})",
            "—" if ca is None or cb is None else f"{cb['cost_to_train_usd'] / ca['cost_to_train_usd']:.2f}×",
        ))
    if best_a and best_b:
        ppd_a = metrics.perf_per_dollar(best_a["cost_to_train_usd"])
        ppd_b = metrics.perf_per_dollar(best_b["cost_to_train_usd"])
        rows.append(("perf per dollar (trainings per $1M)", f"{ppd_a * 1e6:,.1f}", f"{ppd_b * 1e6:,.1f}",
                     f"{metrics.perf_per_dollar_ratio(best_b['cost_to_train_usd'], best_a['cost_to_train_usd']):.2f}×"))
    return rows


def run(args: argparse.Namespace) -> int:

    from pipelines.commands import check_benchmark, check_round, parse_round
    from pipelines.commands.query import render_table
    from pipelines.lib.warehouse.query import connect_published

    base = warehouse_base(args)
    round_version = parse_round(args.round)
    with connect_published(base) as con:
        check_round(con, round_version)
        benchmark = check_benchmark(con, round_version, args.benchmark)
        a = _find(con, round_version, benchmark, args.system_a)
        b = _find(con, round_version, benchmark, args.system_b)
        rows = comparison_rows(a, b, _costs(con, a), _costs(con, b))
    print(f"{benchmark} · {round_version}")
    print(render_table(["figure", f"A: {a['system']}", f"B: {b['system']}", "B / A"], rows).rsplit("\n", 1)[0])
    return 0
