"""CSV price sources: the curated list-price file in the repository, and SkyPilot catalogs.

`curated_list_prices.csv` holds published list prices that no API serves (e.g. Google's TPU
per-chip-hour prices): every row names its `source_url` and `source_date`.

SkyPilot `vms.csv` catalogs are a cross-check only (provider `skypilot-<cloud>`). They are
built from the providers' APIs but carry known quirks (SOURCES.md), each quarantined here:
- an `AcceleratorCount` that disagrees with the SKU's known count (Azure ND96isr_H100_v5: 12);
- an empty `Price` (p5e: Capacity Blocks only);
- the 700.0 placeholder price (TPU v6e regions without a price);
- GCP GPU-only rows and VM-only rows (neither is a whole instance price);
- rows per availability zone: collapsed to one row per region when their prices agree.
`SpotPrice` is not used: SkyPilot copies Price into it where no spot price exists (Azure).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from pipelines.lib.accelerators import match_cloud_sku
from pipelines.lib.prices.normalize import ParsedPrices, PriceCollector

CURATED_CSV = Path(__file__).resolve().parent / "curated_list_prices.csv"
CURATED_SOURCE = "prices/curated"
CURATED_REQUIRED = ("provider", "sku", "region", "pricing_model", "accelerator", "accelerators_per_instance",
                    "price_per_hour_usd", "currency", "unit", "effective_date", "source_url", "source_date")


def load_curated_prices(path: str | Path = CURATED_CSV) -> ParsedPrices:
    """The curated list-price CSV → (prices, quarantine). A row without its source is quarantined."""
    path = Path(path)
    out = PriceCollector(CURATED_SOURCE, path.name)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in CURATED_REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path.name}: missing columns {missing}")
        for line, row in enumerate(reader, start=2):
            ref = f"{path.name}:{line}"
            if not row["source_url"].strip() or not row["source_date"].strip():
                out.quarantine(ref, "curated price without source_url/source_date", row)
                continue
            try:
                count = int(row["accelerators_per_instance"])
            except ValueError:
                count = None
            out.add_price(
                provider=row["provider"], sku=row["sku"], region=row["region"],
                pricing_model=row["pricing_model"], accelerator=row["accelerator"] or None,
                accelerators_per_instance=count, price_per_hour=row["price_per_hour_usd"],
                currency=row["currency"], unit=row["unit"], effective_date=row["effective_date"],
                raw_ref=ref, payload=row, source_url=row["source_url"],
            )
    return out.result()


def _skypilot_count(row: dict[str, str]) -> int | None:
    try:
        return int(float(row.get("AcceleratorCount") or ""))
    except ValueError:
        return None


def parse_skypilot_vms_csv(data: bytes | str, cloud: str, *, file: str = "", source_url: str = "") -> ParsedPrices:
    """A SkyPilot `vms.csv` (or subset) → on-demand cross-check rows (provider `skypilot-<cloud>`)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    out = PriceCollector(f"prices/skypilot-{cloud}", file, source_url)
    by_region: dict[tuple[str, str], list[tuple[int, dict[str, str]]]] = {}
    for line, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        ref = f"{file or 'vms.csv'}:{line}"
        instance = (row.get("InstanceType") or "").strip()
        name = (row.get("AcceleratorName") or "").strip()
        if not instance:
            # GCP lists accelerators apart from machine types (TPU slices, or GPU-only prices)
            if match_cloud_sku(name) is not None:
                instance = name
            elif name:
                out.quarantine(ref, f"GPU-only price for {name} x{row.get('AcceleratorCount')} "
                                    "(machine type's vCPU/RAM not included); not a whole instance price", row)
                continue
        match = match_cloud_sku(instance) if instance else None
        if match is None:
            if name:
                out.quarantine(ref, f"accelerator instance {instance!r} ({name}) has no accelerator alias", row)
            else:
                out.skip_non_accelerator()
            continue
        if cloud == "gcp" and not name:
            out.quarantine(ref, f"VM-only price of {instance} (its GPUs are priced in separate rows)", row)
            continue
        count = _skypilot_count(row)
        if name and count is not None and instance != name and count != match.accelerators_per_instance:
            out.quarantine(ref, f"AcceleratorCount {count} disagrees with the {match.accelerators_per_instance} "
                                f"accelerators of {instance}", row)
            continue
        by_region.setdefault((instance, row.get("Region") or ""), []).append((line, row))
    for (instance, region), rows in by_region.items():
        _add_region_price(out, cloud, instance, region, rows, file)
    return out.result()


def _add_region_price(out: PriceCollector, cloud: str, instance: str, region: str,
                      rows: list[tuple[int, dict[str, Any]]], file: str) -> None:
    """One price per (instance, region) when the per-zone rows agree; otherwise quarantine."""
    match = match_cloud_sku(instance)
    refs = ",".join(str(line) for line, _ in rows)
    ref = f"{file or 'vms.csv'}:{refs}"
    payload = [row for _, row in rows]
    prices = {(row.get("Price") or "").strip() for _, row in rows}
    if prices == {""}:
        out.quarantine(ref, f"no on-demand price for {instance} in {region} (empty Price)", payload)
        return
    if len(prices) > 1:
        out.quarantine(ref, f"zones of {region} disagree on the price of {instance}: {sorted(prices)}", payload)
        return
    out.add_price(
        provider=f"skypilot-{cloud}", sku=instance, region=region, pricing_model="on_demand",
        accelerator=match.accelerator, accelerators_per_instance=match.accelerators_per_instance,
        price_per_hour=prices.pop(), currency="USD", unit="hour", effective_date=None,
        raw_ref=ref, payload=payload,
    )
