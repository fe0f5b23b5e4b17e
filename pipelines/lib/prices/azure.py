"""Azure Retail Prices API pages (`Items`, `NextPageLink`) → normalized price rows.

Rules (see ../shared/prices/SOURCES.md): a row is matched on `armSkuName` + `type` +
productName + meterName, never on meterName alone (captured meter names differ in spacing).
- productName ending in " Windows": the price includes a Windows licence → quarantine.
- meter/sku name containing "Low Priority": the retired low-priority offer → quarantine.
- meter/sku name containing "Spot" (Linux): a clean spot price → kept as `pricing_model=spot`
  (`keep_spot=False` quarantines it instead).
- `type` "Reservation": `retailPrice` is the price of the whole term, so it is divided by the
  term's hours; "DevTestConsumption" and other types → quarantine.
- `savingsPlan` entries of a Consumption item → `savings_plan_1y` / `savings_plan_3y` rows.
- non-USD currency, a unit other than "1 Hour", zero or absurd prices → quarantine.
Items of SKUs that are not GPU VMs at all are only counted.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pipelines.lib.prices.normalize import (
    HOURS_PER_YEAR,
    ParsedPrices,
    PriceCollector,
    concat_parsed,
    load_json,
    number,
)
from pipelines.lib.reference.accelerators import match_cloud_sku

SOURCE = "prices/azure"
PROVIDER = "azure"
HOURLY_UNIT = "1 Hour"
# why: Azure's accelerator VM families are all N-series (NC, ND, NV, NG); a Standard_N* SKU
# without an alias is a GPU VM we have not mapped yet, so it is quarantined, not ignored.
GPU_VM_SKU = re.compile(r"(?i)^Standard_N[A-Z]")
TERM_YEARS = {"1 Year": 1, "3 Years": 3, "5 Years": 5}


def _item_ref(item: dict[str, Any]) -> str:
    if item.get("meterId"):
        return str(item["meterId"])
    parts = (item.get("armSkuName"), item.get("armRegionName"), item.get("meterName"),
             item.get("productName"), item.get("type"), item.get("reservationTerm"))
    return "|".join(str(p) for p in parts if p)


def _exclusion(item: dict[str, Any], keep_spot: bool) -> str | None:
    """Why this item is not the price it seems to be (Windows, Low Priority, ...), or None."""
    product = str(item.get("productName") or "")
    meter = f"{item.get('meterName') or ''} {item.get('skuName') or ''}".lower()
    reasons = []
    if product.rstrip().endswith("Windows"):
        reasons.append("Windows licence included (productName ends in 'Windows'); Linux price wanted")
    if "low priority" in meter:
        reasons.append("Low Priority meter (retired low-priority offer), not an on-demand or spot price")
    if "spot" in meter and not keep_spot:
        reasons.append("Spot meter where the on-demand price is wanted")
    if item.get("unitOfMeasure") != HOURLY_UNIT:
        reasons.append(f"unknown unit {item.get('unitOfMeasure')!r} (expected '{HOURLY_UNIT}')")
    return "; ".join(reasons) or None


def _pricing_model(item: dict[str, Any]) -> tuple[str, float] | str:
    """(pricing_model, hours the price covers) or the reason the type is not used."""
    kind = item.get("type")
    meter = f"{item.get('meterName') or ''} {item.get('skuName') or ''}".lower()
    if kind == "Consumption":
        return ("spot" if "spot" in meter else "on_demand", 1.0)
    if kind == "Reservation":
        years = TERM_YEARS.get(str(item.get("reservationTerm")))
        if years not in (1, 3):
            return f"reservation term {item.get('reservationTerm')!r} not modelled"
        # why: a Reservation item's retailPrice is the price of the whole term, not per hour
        return (f"reserved_{years}y", float(years * HOURS_PER_YEAR))
    return f"price type {kind!r} is not a public retail price (Consumption/Reservation wanted)"


def parse_azure_retail_page(body: bytes | str, *, file: str = "", source_url: str = "",
                            keep_spot: bool = True) -> ParsedPrices:
    """One page of the Retail Prices API → (prices, quarantine) + skipped_non_accelerator."""
    page = load_json(body, f"Azure Retail Prices page {file or ''}".strip())
    if not isinstance(page, dict) or not isinstance(page.get("Items"), list):
        raise ValueError(f"Azure Retail Prices page {file}: no 'Items' list; not a Retail Prices API page")
    out = PriceCollector(SOURCE, file, source_url)
    for item in page["Items"]:
        ref = _item_ref(item) if isinstance(item, dict) else f"Items[{len(out.prices) + len(out.quarantined)}]"
        out.record(ref, item, _parse_item, item, out, keep_spot)
    return out.result()


def _parse_item(item: dict[str, Any], out: PriceCollector, keep_spot: bool) -> None:
    sku = str(item.get("armSkuName") or "")
    ref = _item_ref(item)
    match = match_cloud_sku(sku) if sku else None
    if match is None:
        if GPU_VM_SKU.match(sku):
            out.quarantine(ref, f"GPU VM SKU {sku!r} has no accelerator alias", item)
        else:
            out.skip_non_accelerator()
        return
    reason = _exclusion(item, keep_spot)
    if reason:
        out.quarantine(ref, reason, item)
        return
    model = _pricing_model(item)
    if isinstance(model, str):
        out.quarantine(ref, model, item)
        return
    pricing_model, hours = model
    try:
        hourly = number(item.get("retailPrice")) / hours
    except (TypeError, ValueError):
        hourly = item.get("retailPrice")  # price_problem names it
    common = dict(provider=PROVIDER, sku=sku, region=str(item.get("armRegionName") or ""),
                  accelerator=match.accelerator, accelerators_per_instance=match.accelerators_per_instance,
                  currency=item.get("currencyCode"), unit=HOURLY_UNIT,
                  effective_date=item.get("effectiveStartDate"), payload=item)
    out.add_price(pricing_model=pricing_model, price_per_hour=hourly, raw_ref=ref, **common)
    if item.get("type") == "Consumption" and pricing_model == "on_demand":
        for plan in item.get("savingsPlan") or []:
            years = TERM_YEARS.get(str(plan.get("term")))
            plan_ref = f"{ref}|savingsPlan {plan.get('term')}"
            if years not in (1, 3):
                out.quarantine(plan_ref, f"savings plan term {plan.get('term')!r} not modelled", item)
                continue
            out.add_price(pricing_model=f"savings_plan_{years}y", price_per_hour=plan.get("retailPrice"),
                          raw_ref=plan_ref, **common)


def parse_azure_retail_pages(pages: list[tuple[str, bytes | str]], *, source_url: str = "",
                             keep_spot: bool = True) -> ParsedPrices:
    """Several pages [(file name, body), ...] → one result, duplicate keys across pages quarantined."""
    return concat_parsed([parse_azure_retail_page(body, file=name, source_url=source_url, keep_spot=keep_spot)
                          for name, body in pages], source=SOURCE)


def azure_next_page(body: bytes | str | dict[str, Any]) -> str | None:
    """The page's `NextPageLink`, or None on the last page (null or empty)."""
    page = body if isinstance(body, dict) else load_json(body, "Azure Retail Prices page")
    link = page.get("NextPageLink") if isinstance(page, dict) else None
    return link or None


def _canonical_link(link: str) -> str:
    """Scheme/host lowercased and the default port dropped, so ':443' can't disguise a repeat."""
    parts = urlsplit(link.strip())
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port in (None, 443 if parts.scheme == "https" else 80) else f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, ""))


def is_repeating_link(link: str, seen: set[str]) -> bool:
    """True if `link` was already followed; otherwise remember it in `seen` and return False.

    A page chain whose NextPageLink comes back to an earlier page would never end.
    """
    key = _canonical_link(link)
    if key in seen:
        return True
    seen.add(key)
    return False
