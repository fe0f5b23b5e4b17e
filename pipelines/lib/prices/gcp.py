"""Google Cloud Billing Catalog `services/{id}/skus` responses → normalized price rows.

GPU SKUs (resourceGroup "GPU") and TPU SKUs (resourceGroup "TPU"; v5e/v5p/v6e under Compute
Engine, older TPUs under Cloud TPU) are priced per GPU-hour or per chip-hour, so
`accelerators_per_instance` is 1 and the row's price is the accelerator-hour price. GPU SKUs
are the GPU part only: a machine type (e.g. a3-highgpu-8g) also pays for its vCPUs and RAM.
A description that names a slice (e.g. "v5p-8") is priced per slice and divided by its chips.
Reservation, Dynamic Workload Scheduler and similar SKUs are not list prices → quarantine
(SOURCES.md: SkyPilot's catalog picks such SKUs up and ends at ~45% of the list price).
"""

from __future__ import annotations

import re
from typing import Any

from pipelines.lib.prices.normalize import ParsedPrices, PriceCollector, load_json
from pipelines.lib.reference.accelerators import match_cloud_sku

SOURCE = "prices/gcp"
PROVIDER = "gcp"
USAGE_TYPES = {"OnDemand": "on_demand", "Preemptible": "spot", "Commit1Yr": "cud_1y", "Commit3Yr": "cud_3y"}
NOT_LIST_PRICE = re.compile(r"(?i)\b(reserved|reservation|dws|calendar|flex[- ]?start|dynamic workload)\b")
SLICE_IN_DESCRIPTION = re.compile(r"(?i)\b(?:tpu-?)?(v\d+(?:e|p|litepod)?-\d+)\b")
HOURLY_UNITS = {"h"}


def money(unit_price: dict[str, Any]) -> float:
    """Google's Money: units (int64 as a string) + nanos / 1e9."""
    units, nanos = unit_price.get("units") or 0, unit_price.get("nanos") or 0
    if isinstance(units, (bool, float)) or isinstance(nanos, (bool, float)):
        raise ValueError(f"Money units/nanos must be integers, got {units!r}/{nanos!r}")
    return int(units) + int(nanos) / 1e9


def gcp_next_page_token(body: bytes | str | dict[str, Any]) -> str | None:
    """`nextPageToken`, or None on the last page (absent or empty)."""
    page = body if isinstance(body, dict) else load_json(body, "GCP Billing Catalog skus page")
    return (page.get("nextPageToken") if isinstance(page, dict) else None) or None


def _hourly_rate(sku: dict[str, Any]) -> tuple[float, str, str, Any] | str:
    """(price, currency, unit, effectiveTime) of the current pricing, or the reason it can't be used."""
    infos = sku.get("pricingInfo") or []
    if not infos:
        return "no pricingInfo"
    info = max(infos, key=lambda i: str(i.get("effectiveTime") or ""))
    expression = info.get("pricingExpression") or {}
    unit = expression.get("usageUnit")
    if unit not in HOURLY_UNITS:
        return f"unknown unit {unit!r} ({expression.get('usageUnitDescription')!r}); hourly 'h' expected"
    rates = expression.get("tieredRates") or []
    paid = {(money(r.get("unitPrice") or {}), (r.get("unitPrice") or {}).get("currencyCode")) for r in rates}
    paid_nonzero = {p for p in paid if p[0] > 0}
    if len(paid_nonzero) > 1:
        return f"several tiered rates {sorted(paid_nonzero)}: tiered pricing not modelled"
    price, currency = next(iter(paid_nonzero or paid), (None, None))
    if price is None:
        return "no tieredRates"
    return price, currency, unit, info.get("effectiveTime")


def parse_gcp_skus(body: bytes | str, *, file: str = "", source_url: str = "") -> ParsedPrices:
    """One `skus` page → (prices, quarantine) + skipped_non_accelerator."""
    page = load_json(body, f"GCP Billing Catalog skus page {file}".strip())
    if not isinstance(page, dict) or not isinstance(page.get("skus", []), list):
        raise ValueError(f"GCP Billing Catalog page {file}: no 'skus' list")
    out = PriceCollector(SOURCE, file, source_url)
    for n, sku in enumerate(page.get("skus", [])):
        ref = str((sku.get("skuId") or sku.get("name")) if isinstance(sku, dict) else "") or f"skus[{n}]"
        out.record(ref, sku, _parse_sku, sku, out)
    return out.result()


def _parse_sku(sku: dict[str, Any], out: PriceCollector) -> None:
    category = sku.get("category") or {}
    description = str(sku.get("description") or "")
    ref = str(sku.get("skuId") or sku.get("name") or description)
    if category.get("resourceGroup") not in ("GPU", "TPU") and "tpu" not in description.lower():
        out.skip_non_accelerator()
        return
    if NOT_LIST_PRICE.search(description):
        out.quarantine(ref, "reservation / Dynamic Workload Scheduler SKU, not the list price", sku)
        return
    pricing_model = USAGE_TYPES.get(category.get("usageType"))
    if pricing_model is None:
        out.quarantine(ref, f"usage type {category.get('usageType')!r} not modelled", sku)
        return
    slice_name = SLICE_IN_DESCRIPTION.search(description)
    match = match_cloud_sku(slice_name.group(1)) if slice_name else match_cloud_sku(description)
    if match is None:
        out.quarantine(ref, f"no accelerator alias for SKU description {description!r}", sku)
        return
    rate = _hourly_rate(sku)
    if isinstance(rate, str):
        out.quarantine(ref, rate, sku)
        return
    price, currency, unit, effective = rate
    regions = sku.get("serviceRegions") or ["global"]
    for region in regions:
        out.add_price(
            provider=PROVIDER, sku=description, region=region, pricing_model=pricing_model,
            accelerator=match.accelerator, accelerators_per_instance=match.accelerators_per_instance,
            price_per_hour=price, currency=currency, unit=unit, effective_date=effective,
            raw_ref=f"{ref}@{region}" if len(regions) > 1 else ref, payload=sku,
        )
