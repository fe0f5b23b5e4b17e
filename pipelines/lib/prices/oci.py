"""Oracle Cloud price list API (`items[]` with `currencyCodeLocalizations`) → normalized rows.

GPU parts are priced per GPU-hour ("GPU Per Hour"); a bare-metal shape's price is the per-GPU
price times the GPUs of the shape (SkyPilot's fetch_oci.py does the same). OCI lists one price
for all commercial regions, so `region` is "global". Rows such as "OCI - NVIDIA AI Enterprise -
H100" are software licences billed per GPU-hour, not rentals → quarantine.
"""

from __future__ import annotations

import re
from typing import Any

from pipelines.lib.prices.normalize import (
    ParsedPrices,
    PriceCollector,
    load_json,
    number,
)
from pipelines.lib.reference.accelerators import match_cloud_sku

SOURCE = "prices/oci"
PROVIDER = "oci"
REGION = "global"
GPU_UNIT = "GPU Per Hour"
# The GPU model at the end of a rental part's displayName → the bare-metal shape it prices.
# why "E4" → BM.GPU4.8: OCI names that A100 40GB part after the E4 (AMD) host; SkyPilot's
# catalog prices BM.GPU4.8 at 8 x this part's 3.05.
GPU_PART_SHAPES = {
    "H100": "BM.GPU.H100.8",
    "H200": "BM.GPU.H200.8",
    "B200": "BM.GPU.B200.8",
    "GB200": "BM.GPU.GB200.4",
    "MI300X": "BM.GPU.MI300X.8",
    "A100 - v2": "BM.GPU.A100-v2.8",
    "E4": "BM.GPU4.8",
    "L40S": "BM.GPU.L40S.4",
    "GPU3": "BM.GPU3.8",
}
RENTAL_PART = re.compile(r"Compute - GPU - (?P<model>.+?)\s*$")
LICENCE_PART = re.compile(r"(?i)(AI Enterprise|licen[cs]e|software|subscription)")


def _is_gpu_item(item: dict[str, Any]) -> bool:
    return "GPU" in str(item.get("serviceCategory") or "") or "GPU" in str(item.get("metricName") or "")


def _usd_pay_as_you_go(item: dict[str, Any]) -> float | str:
    """The USD pay-as-you-go value, or the reason there is none."""
    localizations = item.get("currencyCodeLocalizations") or []
    usd = [loc for loc in localizations if loc.get("currencyCode") == "USD"]
    if not usd:
        found = sorted({str(loc.get("currencyCode")) for loc in localizations})
        return f"no USD price (currencies: {', '.join(found) or 'none'})"
    prices = [p for p in usd[0].get("prices") or [] if p.get("model") == "PAY_AS_YOU_GO"]
    if len(prices) != 1:
        return f"expected one PAY_AS_YOU_GO price, found {len(prices)}"
    return prices[0].get("value")


def parse_oci_products(body: bytes | str, *, file: str = "", source_url: str = "") -> ParsedPrices:
    """The products response → (prices, quarantine) + skipped_non_accelerator."""
    page = load_json(body, f"OCI price list {file}".strip())
    if not isinstance(page, dict) or not isinstance(page.get("items"), list):
        raise ValueError(f"OCI price list {file}: no 'items' list")
    out = PriceCollector(SOURCE, file, source_url)
    effective = page.get("lastUpdated")
    for n, item in enumerate(page["items"]):
        ref = str(item.get("partNumber") or "") if isinstance(item, dict) else f"items[{n}]"
        out.record(ref, item, _parse_item, item, out, effective)
    return out.result()


def _parse_item(item: dict[str, Any], out: PriceCollector, effective: Any) -> None:
    part = str(item.get("partNumber") or "")
    name = str(item.get("displayName") or "")
    if not _is_gpu_item(item):
        out.skip_non_accelerator()
        return
    if LICENCE_PART.search(name):
        out.quarantine(part, f"software licence billed per GPU-hour, not an instance rental ({name!r})", item)
        return
    rental = RENTAL_PART.search(name)
    shape = GPU_PART_SHAPES.get(rental.group("model")) if rental else None
    match = match_cloud_sku(shape) if shape else None
    if match is None:
        out.quarantine(part, f"no known shape for GPU part {name!r}", item)
        return
    if item.get("metricName") != GPU_UNIT:
        out.quarantine(part, f"unknown unit {item.get('metricName')!r} (expected {GPU_UNIT!r})", item)
        return
    value = _usd_pay_as_you_go(item)
    if isinstance(value, str):
        out.quarantine(part, value, item)
        return
    try:
        instance_price = number(value) * match.accelerators_per_instance
    except (TypeError, ValueError):
        instance_price = value  # price_problem names it
    out.add_price(
        provider=PROVIDER, sku=shape, region=REGION, pricing_model="on_demand",
        accelerator=match.accelerator, accelerators_per_instance=match.accelerators_per_instance,
        price_per_hour=instance_price, currency="USD", unit=GPU_UNIT, effective_date=effective,
        raw_ref=part, payload=item,
    )
