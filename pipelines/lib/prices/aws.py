"""AWS Price List Bulk API: the EC2 offer file (JSON form) → normalized price rows, streamed.

The real regional EC2 offer file is several GB, so it is never loaded whole. One pass reads
fixed-size chunks and pushes them into ijson push-parsers (C backend when available):
- `products` → each product is looked at once; only accelerator instances are kept
  (a small dict sku → attributes), everything else is counted and forgotten;
- `terms.OnDemand` (and `terms.Reserved`) → each sku's terms are priced against that dict.
The file lists `products` before `terms`, so the dict is complete when terms arrive.
Each byte is parsed once: see `_OfferSplitter`.

Variant rules: the Linux, shared-tenancy, no-preinstalled-software, "Used" capacity product is
the on-demand price wanted; other variants of an accelerator instance type (Windows, RHEL,
SQL, Dedicated, capacity reservations, ...) are quarantined with the reason.
Reserved terms: only the standard "No Upfront" offering is a simple hourly price; other purchase
options (Partial/All Upfront, convertible) are quarantined as "not modelled".
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urljoin

import ijson

from pipelines.lib.io.jsonsafe import DepthGuard, loads_bounded
from pipelines.lib.prices.normalize import ParsedPrices, PriceCollector, load_json
from pipelines.lib.reference.accelerators import match_cloud_sku

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


# why byte-level splitting: each ijson prefix-tracking parser costs a full parse of the bytes it
# sees (~70 MB/s with yajl2_c), so three parsers over the whole file (products, OnDemand,
# Reserved) ran at ~24 MB/s. Instead each byte goes to exactly one parser: the top-level
# "terms" key and its "OnDemand"/"Reserved" keys are found with a regex (an unescaped
# `"name" :` can only be an object key, and the offer schema has no such keys deeper down).
# Products are parsed by ijson (every product must be looked at); in the terms sections only
# the entries of accelerator products are parsed (`_TermEntryScanner`).
TERMS_KEY = re.compile(rb'"terms"\s*:\s*\{')
SECTION_KEY = re.compile(rb'"(OnDemand|Reserved)"\s*:\s*\{')
HOLD_BACK = 256  # bytes kept unsent so a key or a separator split across chunks is still seen
# One sku's entry in a terms section: `"SKU" : { "SKU.TERMCODE" : {...} }`. Its inner key repeats
# the sku followed by '.', which no other key or value of a term does.
TERM_ENTRY = re.compile(rb'"([A-Za-z0-9]{8,40})"\s*:\s*\{\s*"\1\.')


class _TermEntryScanner:
    """Finds each sku's entry in a terms section and parses only the wanted skus' entries.

    why: building Python objects for every term of every sku (~98% are not accelerator
    instances) halves throughput; entries lie side by side, so a wanted entry ends where the
    next one starts and can be parsed on its own.
    """

    def __init__(self, wanted: set[str], on_entry):
        self.wanted = wanted
        self.on_entry = on_entry
        self.buffer = b""
        self.pending = False  # the buffer starts with a wanted entry whose end is not seen yet

    def send(self, data: bytes) -> None:
        buffer = self.buffer + data
        keep_from = max(0, len(buffer) - HOLD_BACK)
        position = 0
        while found := TERM_ENTRY.search(buffer, position):
            if self.pending:
                self._emit(buffer[:found.start()])
            self.pending = found.group(1).decode() in self.wanted
            if self.pending:
                buffer = buffer[found.start():]
                position = found.end() - found.start()
            else:
                position = found.end()
            keep_from = 0 if self.pending else max(position, len(buffer) - HOLD_BACK)
        self.buffer = buffer if self.pending else buffer[keep_from:]

    def close(self) -> None:
        tail = self.buffer.rstrip()
        if not tail.endswith(b"}"):
            raise ValueError("truncated: a terms section is not closed")
        if self.pending:
            self._emit(tail[:-1])
        self.buffer = b""

    def _emit(self, entry: bytes) -> None:
        entry = entry.rstrip()
        if entry.endswith(b","):
            entry = entry[:-1]
        try:
            parsed = loads_bounded(b"{" + entry + b"}")
        except ValueError as error:
            raise ValueError(f"malformed terms entry: {error}") from error
        for sku, terms in parsed.items():
            self.on_entry(sku, terms)


class _OfferSplitter:
    """Routes the offer file's bytes: root+products → one parser, each terms section → its own."""

    def __init__(self, state: _OfferState, include_reserved: bool):
        self.state = state
        self.include_reserved = include_reserved
        self.products_out = ijson.sendable_list()
        self.products = BACKEND.kvitems_coro(self.products_out, "products")
        self.in_terms = False
        self.section: str | None = None
        self.section_parser: _TermEntryScanner | None = None
        self.buffer = b""

    def feed(self, chunk: bytes) -> None:
        buffer = self.buffer + chunk
        while True:
            if not self.in_terms:
                found = TERMS_KEY.search(buffer)
                if found is None:
                    self._send_products(buffer[:-HOLD_BACK])
                    buffer = buffer[-HOLD_BACK:]
                    break
                # close the root object for the products parser so it checks what it saw is whole
                self._send_products(buffer[:found.start()] + b'"terms":{}}')
                self.products.close()
                self._drain_products()
                self.in_terms = True
                buffer = buffer[found.end():]
                continue
            found = SECTION_KEY.search(buffer)
            if found is None:
                self._send_section(buffer[:-HOLD_BACK])
                buffer = buffer[-HOLD_BACK:]
                break
            before = buffer[:found.start()].rstrip()
            if self.section is None:
                if before:
                    raise ValueError(f"unexpected content in 'terms' before {found.group(1).decode()!r}")
            else:
                if not before.endswith(b","):
                    raise ValueError(f"'terms' section {self.section!r} is not followed by ','")
                self._send_section(before[:-1])
                self._close_section()
            self._open_section(found.group(1).decode())
            buffer = buffer[found.end():]
        self.buffer = buffer

    def finish(self) -> None:
        if not self.in_terms:
            self._send_products(self.buffer)
            self.products.close()
            self._drain_products()
            return
        tail = self.buffer.rstrip()
        for what in ("the document", "'terms'"):
            if not tail.endswith(b"}"):
                raise ValueError(f"truncated: {what} is not closed")
            tail = tail[:-1].rstrip()
        if self.section is None:
            if tail:
                raise ValueError("unexpected content in 'terms'")
            return
        self._send_section(tail)
        self._close_section()

    def _send_products(self, data: bytes) -> None:
        if data:
            self.products.send(data)
            self._drain_products()

    def _drain_products(self) -> None:
        for sku, product in self.products_out:
            self.state.out.record(str(sku), product, self.state.product, sku, product)
        self.products_out.clear()

    def _open_section(self, name: str) -> None:
        self.section = name
        wanted = name == "OnDemand" or (name == "Reserved" and self.include_reserved)
        reserved = name == "Reserved"
        self.section_parser = _TermEntryScanner(
            set(self.state.wanted),
            lambda sku, terms: self.state.out.record(str(sku), terms, self.state.terms, sku, terms, reserved),
        ) if wanted else None

    def _send_section(self, data: bytes) -> None:
        if data and self.section_parser is not None:
            self.section_parser.send(data)

    def _close_section(self) -> None:
        if self.section_parser is not None:
            self.section_parser.close()


def parse_aws_offer(stream: BinaryIO, *, file: str = "", source_url: str = "",
                    include_reserved: bool = True, chunk_size: int = CHUNK_SIZE) -> ParsedPrices:
    """Stream an EC2 offer file (binary file object) → (prices, quarantine) + skipped count.

    Memory stays bounded by the chunk size, one product/term object at a time and the dict
    of accelerator products. The file must list `products` before `terms` (AWS's files do).
    A truncated or malformed file raises ValueError.
    """
    out = PriceCollector(SOURCE, file, source_url)
    splitter = _OfferSplitter(_OfferState(out), include_reserved)
    guard = DepthGuard()  # before the incremental parser, whose memory grows with depth squared
    seen_bytes = 0
    try:
        while chunk := stream.read(chunk_size):
            seen_bytes += len(chunk)
            guard.feed(chunk)
            splitter.feed(chunk)
        if seen_bytes == 0:
            raise ValueError("empty body")
        splitter.finish()
    except (ijson.JSONError, ValueError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"AWS offer file {file or ''}: invalid or truncated JSON "
                         f"(read {seen_bytes} bytes): {first_line}") from error
    return out.result()


def parse_aws_offer_path(path: str | os.PathLike[str], *, source_url: str = "",
                         include_reserved: bool = True) -> ParsedPrices:
    path = Path(path)
    with path.open("rb") as stream:
        return parse_aws_offer(stream, file=path.name, source_url=source_url, include_reserved=include_reserved)


def aws_region_index_urls(body: bytes | str, base_url: str) -> dict[str, str]:
    """region_index.json → {region: absolute URL of its current offer file (JSON form)}."""
    index = load_json(body, "AWS region_index.json")
    regions = index.get("regions") if isinstance(index, dict) else None
    if not isinstance(regions, dict):
        raise ValueError("AWS region_index.json: no 'regions' object")
    urls = {}
    for region, entry in regions.items():
        path = entry.get("currentVersionUrl") if isinstance(entry, dict) else None
        if not path or not isinstance(path, str):
            raise ValueError(f"AWS region_index.json: region {region!r} has no currentVersionUrl")
        urls[region] = urljoin(base_url.rstrip("/") + "/", path)
    return urls
