"""One SkyPilot catalog `vms.csv` → catalog price rows of the cloud it describes, and quarantine rows.

Parsed by header name, never by position (the column order differs per cloud; v8 adds `Arch`, spheron
adds `Provider`, ...). Each row becomes a price or a quarantine row with its reason
(../shared/prices/skypilot-catalog/SOURCES.md):
- no `AcceleratorName`: a CPU-only VM, skipped and counted;
- GCP GPU rows (no `InstanceType`): the GPU attach price without the host VM, not an instance price;
- an `AcceleratorCount` that disagrees with the instance type's known count (Azure ND96isr_H100_v5: 12);
- an empty `Price`, the 700.0 placeholder (GCP TPU v6e regions without a price), absurd prices;
- a `SpotPrice` above `Price` (RunPod L40S: the columns look swapped; GCP H100 in two regions: the
  fetcher matched another SKU), after the sentinels 99999999 (primeintellect) and 0.00 (vast) are
  read as "no spot price";
- a catalog name that does not say which part it is (e.g. `A100` with no memory or form factor,
  `H100` of a reseller): not mapped rather than guessed;
- per-zone rows of one instance and region are one price when they agree (within 1e-6), else quarantined.
The accelerator key comes from the accelerator matcher: `match_cloud_sku` for instance types and TPU
slice names it knows (Azure, OCI, GCP), else `catalog_accelerators.csv` names the MLPerf-style model
of a catalog row and `match_mlperf_accelerator` maps it.
Which catalog version and cloud files are read: `catalog.py`.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.io.package_data import package_path
from pipelines.lib.prices.normalize import ParsedPrices, PriceCollector
from pipelines.lib.reference.accelerators import (
    match_cloud_sku,
    match_mlperf_accelerator,
)

# why spot: Mithril sells by auction, so its `Price` is a market clearing price, not a list price.
PRICING_MODEL_BY_CLOUD = {"mithril": "spot"}
REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price")
NO_SPOT_SENTINELS = (99999999.0, 0.0)
MAPPING_CSV = package_path(__package__, "catalog_accelerators.csv")
UNSPECIFIED_REGION = "unspecified"


@dataclass(frozen=True)
class CatalogRule:
    cloud: str
    accelerator_name: re.Pattern[str]  # the catalog's AcceleratorName, matched whole, any letter case
    instance: re.Pattern[str] | None
    gpuinfo_contains: str
    model_name: str  # empty: deliberately not mapped, `note` says why
    note: str

    def matches(self, cloud: str, name: str, instance: str, gpuinfo: str) -> bool:
        return (self.cloud in ("*", cloud) and self.accelerator_name.fullmatch(name) is not None
                and (self.instance is None or self.instance.fullmatch(instance) is not None)
                and self.gpuinfo_contains in gpuinfo)


@lru_cache(maxsize=1)
def catalog_rules(path: Path = MAPPING_CSV) -> tuple[CatalogRule, ...]:
    with Path(path).open(newline="", encoding="utf-8") as handle:
        return tuple(
            CatalogRule(row["cloud"].strip(), re.compile(row["accelerator_name"].strip(), re.I),
                        re.compile(row["instance_pattern"], re.I) if row["instance_pattern"].strip() else None,
                        row["gpuinfo_contains"], row["model_name"].strip(), row.get("note") or "")
            for row in csv.DictReader(handle)
        )


def _accelerator(cloud: str, row: dict[str, str]) -> tuple[str, int | None] | str:
    """(accelerator key, accelerators per instance), or the reason the row is not mapped."""
    name = (row.get("AcceleratorName") or "").strip()
    instance = (row.get("InstanceType") or "").strip()
    count = number_or_none(row.get("AcceleratorCount"), finite=True)
    if not instance:
        slice_match = match_cloud_sku(name)
        if slice_match is not None:  # a GCP TPU slice: priced per slice, chips from its name
            return slice_match.accelerator, slice_match.accelerators_per_instance
        return (f"GPU-only price for {name} x{row.get('AcceleratorCount')} (the machine type's vCPU/RAM "
                "are priced in other rows); not a whole instance price")
    known = match_cloud_sku(instance)
    if known is not None:
        if count is not None and known.accelerators_per_instance is not None \
                and int(count) != known.accelerators_per_instance:
            return (f"AcceleratorCount {row.get('AcceleratorCount')} disagrees with the "
                    f"{known.accelerators_per_instance} accelerators of {instance}")
        return known.accelerator, known.accelerators_per_instance
    gpuinfo = row.get("GpuInfo") or ""
    for rule in catalog_rules():
        if rule.matches(cloud, name, instance, gpuinfo):
            if not rule.model_name:
                return f"{cloud} {instance} ({name}): not mapped on purpose: {rule.note}"
            key = match_mlperf_accelerator(rule.model_name)
            if key is None:
                return f"catalog model {rule.model_name!r} has no accelerator key"
            if count is None or count < 1 or not float(count).is_integer():
                return f"AcceleratorCount {row.get('AcceleratorCount')!r} is not a whole number of accelerators"
            return key, int(count)
    return (f"{cloud} {instance} ({name}): the catalog does not say which {name} part it is "
            "(memory / form factor), so it is not mapped to an accelerator")


def _spot_problem(row: dict[str, str], price: float) -> str | None:
    spot = number_or_none(row.get("SpotPrice"), finite=True)
    if spot is None or spot in NO_SPOT_SENTINELS:
        return None
    if spot > price * (1 + 1e-9):
        return (f"SpotPrice {row.get('SpotPrice')} above Price {row.get('Price')}: the columns look swapped "
                "or the row mixes two SKUs; the on-demand price is not trusted")
    return None


def parse_skypilot_vms_csv(data: bytes | str, cloud: str, *, file: str = "", source_url: str = "",
                           version: str | None = None, newest: str | None = None) -> ParsedPrices:
    """One SkyPilot `vms.csv` → catalog price rows (provider = the cloud) and quarantine rows.

    `version` is the catalog version the file is from, `newest` the newest version of the catalog: the
    rows say both (`catalog_version`, and `catalog_fallback` when the file is from an older version).
    Raises ValueError when a required column is missing (the file is not a vms.csv).
    """
    text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{file or 'vms.csv'}: not a SkyPilot vms.csv, missing columns {missing} "
                         f"(header: {reader.fieldnames})")
    out = PriceCollector(f"prices/catalog-{cloud}", file, source_url, price_source="catalog")
    groups: dict[tuple[str, str], list[tuple[int, dict[str, str], str, int | None, float]]] = {}
    for line, row in enumerate(reader, start=2):
        ref = f"{file or 'vms.csv'}:{line}"
        if not (row.get("AcceleratorName") or "").strip():
            out.skip_non_accelerator()
            continue
        mapped = _accelerator(cloud, row)
        if isinstance(mapped, str):
            out.quarantine(ref, mapped, row)
            continue
        price = number_or_none(row.get("Price"), finite=True)
        if price is None:
            out.quarantine(ref, f"no on-demand price (Price {row.get('Price')!r})", row)
            continue
        problem = _spot_problem(row, price)
        if problem:
            out.quarantine(ref, problem, row)
            continue
        sku = (row.get("InstanceType") or "").strip() or row["AcceleratorName"].strip()
        region = (row.get("Region") or "").strip() or UNSPECIFIED_REGION
        groups.setdefault((sku, region), []).append((line, row, *mapped, price))
    for (sku, region), rows in groups.items():
        ref = f"{file or 'vms.csv'}:{','.join(str(r[0]) for r in rows)}"
        prices = sorted({r[4] for r in rows})
        if not math.isclose(prices[0], prices[-1], rel_tol=1e-6):
            out.quarantine(ref, f"zones of {region} disagree on the price of {sku}: {prices}", [r[1] for r in rows])
            continue
        _line, row, accelerator, count, price = rows[0]
        out.add_price(
            provider=cloud, sku=sku, region=region, pricing_model=PRICING_MODEL_BY_CLOUD.get(cloud, "on_demand"),
            accelerator=accelerator, accelerators_per_instance=count, price_per_hour=price, currency="USD",
            unit="hour", effective_date=None, raw_ref=ref, payload=[r[1] for r in rows],
        )
    parsed = out.result()
    if version is None:
        return parsed
    tagged = parsed.prices.with_columns(
        pl.lit(version, dtype=pl.String).alias("catalog_version"),
        pl.lit(newest is not None and version != newest, dtype=pl.Boolean).alias("catalog_fallback"))
    return ParsedPrices(tagged, parsed.quarantine, parsed.skipped_non_accelerator)
