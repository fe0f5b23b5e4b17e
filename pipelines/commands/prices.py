"""`mlperf-warehouse prices --accelerator H100`: the current cheapest price per provider (read-only)."""

from __future__ import annotations

import argparse

SQL = """
with matches as (
    select accelerator, (lower(accelerator) = lower($acc) or lower(model) = lower($acc)) as exact
    from dim_accelerator
    where lower(accelerator) = lower($acc) or lower(model) = lower($acc)
       or lower(accelerator) like '%' || lower($acc) || '%' or lower(model) like '%' || lower($acc) || '%'
),
wanted as (  -- an exact key/model match wins; otherwise every model containing the text (H100: SXM, PCIe, NVL)
    select accelerator from matches where exact or not exists (select 1 from matches where exact)
),
ranked as (
    select p.provider, p.sku, p.region, p.pricing_model, p.accelerator,
           round(p.price_per_accelerator_hour_usd, 4) as price_per_accelerator_hour_usd,
           p.accelerators_per_instance, p.price_per_hour_usd, p.fetched_at,
           row_number() over (partition by p.provider
                              order by p.price_per_accelerator_hour_usd, p.sku, p.region) as rank
    from fct_cloud_price_current p
    join wanted w on p.accelerator = w.accelerator
    where p.pricing_model = $model
)
select provider, sku, region, pricing_model, accelerator, price_per_accelerator_hour_usd,
       accelerators_per_instance, fetched_at
from ranked where rank = 1
order by price_per_accelerator_hour_usd, provider
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("prices", help="the current cheapest accelerator-hour price per provider")
    p.add_argument("--accelerator", required=True, help="dim_accelerator key or model, e.g. H100 (case-insensitive)")
    p.add_argument("--pricing-model", default="on_demand", help="on_demand (default), spot, reserved_1y, ...")
    p.add_argument("--warehouse-dir", help="default: MLPERF_WAREHOUSE_DIR or ./warehouse")
    p.set_defaults(handler=run)


def cheapest(con, accelerator: str, pricing_model: str = "on_demand") -> tuple[list[str], list[tuple]]:
    cursor = con.execute(SQL, {"acc": accelerator.strip(), "model": pricing_model})
    return [d[0] for d in cursor.description], cursor.fetchall()


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.commands.query import render_table
    from pipelines.lib.paths import published_db
    from pipelines.lib.query import connect_readonly

    base = Path(args.warehouse_dir).resolve() if args.warehouse_dir else None
    with connect_readonly(published_db(base)) as con:
        columns, rows = cheapest(con, args.accelerator, args.pricing_model)
    if not rows:
        print(f"no current {args.pricing_model} price for an accelerator matching {args.accelerator!r}")
        return 1
    print(render_table(columns, rows))
    return 0
