"""`mlperf-warehouse prices --accelerator H100`: the current cheapest price per provider and accelerator model."""

from __future__ import annotations

import argparse

from pipelines.commands import add_warehouse_dir, warehouse_base

EXAMPLES = """examples:
  mlperf-warehouse prices --accelerator h100
  mlperf-warehouse prices --accelerator tpu                 # every TPU model, each on its own rows
  mlperf-warehouse prices --accelerator nvidia-b200 --pricing-model spot

Each accelerator model gets its own row per provider (the cheapest SKU and region for it), from the offers
costs use (mart_price_offer: one price source per provider, `bookable` as the cost headline defines it)."""

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
           p.accelerators_per_instance, p.price_source, p.provider_kind, p.is_bookable as bookable, p.fetched_at,
           row_number() over (partition by p.accelerator, p.provider
                              order by p.price_per_accelerator_hour_usd, p.sku, p.region) as rank
    from mart_price_offer p
    join wanted w on p.accelerator = w.accelerator
    where p.pricing_model = $model
)
select accelerator, provider, sku, region, pricing_model, price_per_accelerator_hour_usd,
       accelerators_per_instance, price_source, provider_kind, bookable, fetched_at
from ranked where rank = 1
order by accelerator, price_per_accelerator_hour_usd, provider
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "prices", help="the current cheapest accelerator-hour price per provider and accelerator model",
        description="The cheapest current price per accelerator-hour, per accelerator model and cloud provider.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--accelerator", required=True, metavar="NAME",
                   help="dim_accelerator key or model, or part of one, e.g. h100, tpu, nvidia-h100-sxm-80gb")
    p.add_argument("--pricing-model", default="on_demand", metavar="MODEL",
                   help="on_demand (default), spot, cud_1y, ... (a wrong one lists those the warehouse holds)")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


def cheapest(con, accelerator: str, pricing_model: str = "on_demand") -> tuple[list[str], list[tuple]]:
    cursor = con.execute(SQL, {"acc": accelerator.strip(), "model": pricing_model})
    return [d[0] for d in cursor.description], cursor.fetchall()


def check_values(con, accelerator: str, pricing_model: str) -> None:
    """Exit 2 (UsageError) for an accelerator or pricing model the warehouse has no price for."""
    from pipelines.commands import unknown

    models = [m for (m,) in con.execute(
        "select distinct pricing_model from mart_price_offer order by 1").fetchall()]
    if not models:
        raise ValueError("no cloud prices in this warehouse (refreshed with --no-prices?); "
                         "`mlperf-warehouse refresh` fetches them")
    if pricing_model not in models:
        raise unknown("pricing model", pricing_model, models)
    priced = con.execute(
        "select distinct a.accelerator, a.model from mart_price_offer p "
        "join dim_accelerator a using (accelerator) order by 1").fetchall()
    text = accelerator.strip().lower()
    if not any(text in key.lower() or text in (model or "").lower() for key, model in priced):
        raise unknown("accelerator", accelerator, [key for key, _ in priced],
                      "(accelerators with a current price; part of a name works too, e.g. h100 or tpu)")


def run(args: argparse.Namespace) -> int:

    from pipelines.commands.query import render_table
    from pipelines.lib.warehouse.query import connect_published

    base = warehouse_base(args)
    with connect_published(base) as con:
        check_values(con, args.accelerator, args.pricing_model)
        columns, rows = cheapest(con, args.accelerator, args.pricing_model)
    if not rows:
        print(f"no current {args.pricing_model} price for an accelerator matching {args.accelerator!r}")
        return 1
    print(render_table(columns, rows))
    return 0
