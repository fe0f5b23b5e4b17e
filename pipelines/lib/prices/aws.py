"""AWS Price List Bulk API: the EC2 offer file (JSON form) → normalized price rows, streamed.

The real regional EC2 offer file is several GB, so it is never loaded whole. One pass reads
fixed-size chunks and pushes each into ijson push-parsers (C backend when available):
- `products` → each product is looked at once; only accelerator instances are kept
  (a small dict sku → attributes), everything else is counted and forgotten;
- `terms.OnDemand` (and `terms.Reserved`) → each sku's terms are priced against that dict.
The file lists `products` before `terms`, so the dict is complete when terms arrive; the
products parser is dropped as soon as the first term arrives to save its parsing cost.

Variant rules: the Linux, shared-tenancy, no-preinstalled-software, "Used" capacity product is
the on-demand price wanted; other variants of an accelerator instance type (Windows, RHEL,
SQL, Dedicated, capacity reservations, ...) are quarantined with the reason.
Reserved terms: only the standard "No Upfront" offering is a simple hourly price; other purchase
options (Partial/All Upfront, convertible) are quarantined as "not modelled".
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urljoin

import ijson

from pipelines.lib.accelerators import match_cloud_sku
from pipelines.lib.prices.normalize import ParsedPrices, PriceCollector, load_json

SOURCE = "prices/aws"
PROVIDER = "aws"
CHUNK_SIZE = 1 << 20
# why: yajl2_c does prefix matching and object building in C (~10x the pure-Python backend)
try:
    BACKEND = ijson.get_backend("yajl2_c")
except Exception:  # pragma: no cover - depends on the wheel installed
    BACKEND = ijson
ACCELERATOR_FAMILIES = {"GPU instance", "Machine Learning ASIC Instances"}
WANTED_VARIANT = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
}
LEASE_YEARS = {"1yr": 1, "3yr": 3}


def _looks_like_accelerator(attrs: dict[str, Any]) -> bool:
    """An instance type with GPUs/accelerators even if we have no alias for it yet."""
    gpu = str(attrs.get("gpu") or "0").strip()
    return (gpu not in ("", "0", "NA")) or attrs.get("instanceFamily") in ACCELERATOR_FAMILIES


def _variant_problem(attrs: dict[str, Any]) -> str | None:
    wrong = [f"{key}={attrs.get(key)!r}" for key, want in WANTED_VARIANT.items() if attrs.get(key) != want]
    if attrs.get("marketoption") not in (None, "OnDemand"):
        wrong.append(f"marketoption={attrs.get('marketoption')!r}")
    if wrong:
        return ("not the Linux shared-tenancy on-demand variant (" + ", ".join(wrong) + ")")
    return None


class _OfferState:
    def __init__(self, out: PriceCollector):
        self.out = out
        self.wanted: dict[str, dict[str, Any]] = {}  # sku -> attributes of priced products

    def product(self, sku: str, product: dict[str, Any]) -> None:
        family = str(product.get("productFamily") or "")
        attrs = product.get("attributes") or {}
        instance_type = attrs.get("instanceType")
        if not family.startswith("Compute Instance") or not instance_type:
            self.out.skip_non_accelerator()
            return
        match = match_cloud_sku(instance_type)
        if match is None:
            if _looks_like_accelerator(attrs):
                self.out.quarantine(sku, f"accelerator instance type {instance_type!r} has no accelerator alias",
                                    product)
            else:
                self.out.skip_non_accelerator()
            return
        problem = _variant_problem(attrs)
        if problem:
            self.out.quarantine(sku, problem, product)
            return
        self.wanted[sku] = {"instanceType": instance_type, "regionCode": attrs.get("regionCode") or "",
                            "location": attrs.get("location"), "match": match}

    def terms(self, sku: str, terms: dict[str, Any], reserved: bool) -> None:
        product = self.wanted.get(sku)
        if product is None:
            return  # a product already counted as non-accelerator or quarantined
        for term in terms.values():
            pricing_model = "on_demand"
            if reserved:
                attrs = term.get("termAttributes") or {}
                years = LEASE_YEARS.get(attrs.get("LeaseContractLength"))
                if (attrs.get("PurchaseOption") != "No Upfront" or attrs.get("OfferingClass") != "standard"
                        or years is None):
                    self.out.quarantine(
                        f"{sku}.{term.get('offerTermCode')}",
                        "reserved offer not modelled (only standard No Upfront 1yr/3yr is a plain hourly price): "
                        f"{attrs.get('OfferingClass')} {attrs.get('PurchaseOption')} {attrs.get('LeaseContractLength')}",
                        term)
                    continue
                pricing_model = f"reserved_{years}y"
            for rate_code, dim in (term.get("priceDimensions") or {}).items():
                self._dimension(product, term, rate_code, dim, pricing_model)

    def _dimension(self, product, term, rate_code, dim, pricing_model) -> None:
        unit = dim.get("unit")
        if unit != "Hrs":
            self.out.quarantine(rate_code, f"unknown unit {unit!r} (expected 'Hrs')", term)
            return
        prices = dim.get("pricePerUnit") or {}
        currency = "USD" if "USD" in prices else (next(iter(prices), None))
        match = product["match"]
        self.out.add_price(
            provider=PROVIDER, sku=product["instanceType"], region=product["regionCode"],
            pricing_model=pricing_model, accelerator=match.accelerator,
            accelerators_per_instance=match.accelerators_per_instance,
            price_per_hour=prices.get(currency), currency=currency, unit="Hrs",
            effective_date=term.get("effectiveDate"), raw_ref=rate_code, payload=term,
        )


def parse_aws_offer(stream: BinaryIO, *, file: str = "", source_url: str = "",
                    include_reserved: bool = True, chunk_size: int = CHUNK_SIZE) -> ParsedPrices:
    """Stream an EC2 offer file (binary file object) → (prices, quarantine) + skipped count.

    Memory stays bounded by the chunk size, one product/term object at a time and the dict
    of accelerator products. A truncated or malformed file raises ValueError.
    """
    out = PriceCollector(SOURCE, file, source_url)
    state = _OfferState(out)
    products, on_demand, reserved = (ijson.sendable_list() for _ in range(3))
    parsers = {
        "products": BACKEND.kvitems_coro(products, "products"),
        "on_demand": BACKEND.kvitems_coro(on_demand, "terms.OnDemand"),
    }
    if include_reserved:
        parsers["reserved"] = BACKEND.kvitems_coro(reserved, "terms.Reserved")
    seen_bytes = 0
    try:
        while True:
            chunk = stream.read(chunk_size)
            if not chunk:
                break
            seen_bytes += len(chunk)
            for parser in parsers.values():
                parser.send(chunk)
            for sku, product in products:
                state.product(sku, product)
            products.clear()
            if (on_demand or reserved) and "products" in parsers:
                # why: products precede terms; once terms flow, parsing products is wasted work
                del parsers["products"]
            for sku, terms in on_demand:
                state.terms(sku, terms, reserved=False)
            on_demand.clear()
            for sku, terms in reserved:
                state.terms(sku, terms, reserved=True)
            reserved.clear()
        for parser in parsers.values():
            parser.close()
    except ijson.JSONError as error:
        raise ValueError(f"AWS offer file {file or ''}: invalid or truncated JSON after {seen_bytes} bytes: "
                         f"{str(error).splitlines()[0]}") from error
    for sku, terms in on_demand:
        state.terms(sku, terms, reserved=False)
    for sku, terms in reserved:
        state.terms(sku, terms, reserved=True)
    if seen_bytes == 0:
        raise ValueError(f"AWS offer file {file or ''}: empty body")
    return out.result()


def parse_aws_offer_path(path: str | os.PathLike[str], *, source_url: str = "",
                         include_reserved: bool = True) -> ParsedPrices:
    path = Path(path)
    with path.open("rb") as stream:
        return parse_aws_offer(stream, file=path.name, source_url=source_url, include_reserved=include_reserved)


def parse_aws_offer_bytes(body: bytes, *, file: str = "", source_url: str = "",
                          include_reserved: bool = True) -> ParsedPrices:
    return parse_aws_offer(io.BytesIO(body), file=file, source_url=source_url, include_reserved=include_reserved)


def aws_region_index_urls(body: bytes | str, base_url: str) -> dict[str, str]:
    """region_index.json → {region: absolute URL of its current offer file (JSON form)}."""
    index = load_json(body, "AWS region_index.json")
    regions = index.get("regions") if isinstance(index, dict) else None
    if not isinstance(regions, dict):
        raise ValueError("AWS region_index.json: no 'regions' object")
    urls = {}
    for region, entry in regions.items():
        path = (entry or {}).get("currentVersionUrl")
        if not path:
            raise ValueError(f"AWS region_index.json: region {region!r} has no currentVersionUrl")
        urls[region] = urljoin(base_url.rstrip("/") + "/", path)
    return urls
