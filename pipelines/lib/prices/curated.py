"""The curated list-price file in the repository: published list prices no API serves.

`curated_list_prices.csv` holds, per row, the price key, the accelerator key, the figure as the
source quotes it (`price_as_quoted`), its `source_url` and `source_date` (when it was read); rows
are `price_source = 'list'` of their cloud's provider (Google's TPU list prices are provider `gcp`).
A row without its source or quote, or naming an accelerator `dim_accelerator` does not know, is
quarantined. (The SkyPilot catalog is parsed by `catalog_vms.py`.)
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

from pipelines.lib.io.package_data import package_path
from pipelines.lib.prices.normalize import ParsedPrices, PriceCollector
from pipelines.lib.reference.accelerators import ACCELERATORS_CSV

CURATED_CSV = package_path(__package__, "curated_list_prices.csv")
CURATED_SOURCE = "prices/curated"
CURATED_REQUIRED = ("provider", "sku", "region", "pricing_model", "accelerator", "accelerators_per_instance",
                    "price_per_hour_usd", "currency", "unit", "effective_date", "source_url", "source_date",
                    "price_as_quoted")


@lru_cache(maxsize=1)
def known_accelerators() -> frozenset[str]:
    with ACCELERATORS_CSV.open(newline="", encoding="utf-8") as handle:
        return frozenset(row["accelerator"].strip() for row in csv.DictReader(handle))


def load_curated_prices(path: str | Path = CURATED_CSV) -> ParsedPrices:
    """The curated list-price CSV → (prices, quarantine). A row without its source is quarantined."""
    path = Path(path)
    out = PriceCollector(CURATED_SOURCE, path.name, price_source="list")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in CURATED_REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path.name}: missing columns {missing}")
        for line, row in enumerate(reader, start=2):
            ref = f"{path.name}:{line}"
            if not all((row[c] or "").strip() for c in ("source_url", "source_date", "price_as_quoted")):
                out.quarantine(ref, "curated price without source_url/source_date/price_as_quoted", row)
                continue
            if row["accelerator"].strip() not in known_accelerators():
                out.quarantine(ref, f"accelerator {row['accelerator']!r} is not a dim_accelerator key", row)
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
