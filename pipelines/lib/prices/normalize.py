"""The normalized price row shared by every provider parser, and the trap classification.

Every parser feeds a `PriceCollector`: each raw record ends as exactly one of
- a price row (`add_price`), after the checks below;
- a quarantine row (`quarantine`) with a clear reason and the raw record as JSON text;
- a count of records that are plainly not accelerator instances (`skip_non_accelerator`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

import polars as pl

from pipelines.lib.staging.validation import QUARANTINE_SCHEMA
from schemas import polars_schema
from schemas.prices import (
    MAX_PLAUSIBLE_PER_ACCELERATOR_HOUR_USD,
    PRICE_SOURCES,
    PRICING_MODELS,
    CloudPriceRow,
)

# A staged price snapshot (`CloudPriceRow`), and the row every parser emits: the same without the two
# columns added when it is staged.
STAGED_PRICE_SCHEMA: dict[str, pl.DataType] = polars_schema(CloudPriceRow)
PRICE_SCHEMA: dict[str, pl.DataType] = {
    c: t for c, t in STAGED_PRICE_SCHEMA.items() if c not in ("fetched_at", "snapshot")}
# Quarantine rows as a parser writes them; the partition (the snapshot) is added when they are staged.
PARSED_QUARANTINE_SCHEMA: dict[str, pl.DataType] = {c: t for c, t in QUARANTINE_SCHEMA.items() if c != "partition"}
PRICE_KEY = ("provider", "sku", "region", "pricing_model")

# why: SkyPilot writes 700.0 (TPU_V6E_MAX_PRICE) where Google has no price for a region.
PLACEHOLDER_PRICES_USD = frozenset({700.0})
HOURS_PER_YEAR = 8760  # Azure reservations and AWS upfront fees are spread over 365-day years
# What a parser raises when a record has an unexpected shape.
MALFORMED = (AttributeError, KeyError, TypeError, ValueError, IndexError, OverflowError)


def number(value: Any) -> float:
    """A price or count field as a float; booleans and non-numbers raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


class ParsedPrices(tuple):
    """`(prices, quarantine)`, unpackable as a pair, plus `skipped_non_accelerator`."""

    def __new__(cls, prices: pl.DataFrame, quarantine: pl.DataFrame, skipped_non_accelerator: int = 0):
        self = super().__new__(cls, (prices, quarantine))
        self.prices = prices
        self.quarantine = quarantine
        self.skipped_non_accelerator = skipped_non_accelerator
        return self

    def __repr__(self) -> str:
        return (f"ParsedPrices(prices={self.prices.height} rows, quarantine={self.quarantine.height} rows, "
                f"skipped_non_accelerator={self.skipped_non_accelerator})")


def payload_text(record: Any) -> str:
    """The raw record as stable JSON text (Decimal and dates become strings)."""
    return json.dumps(record, sort_keys=True, default=str, ensure_ascii=False)


def to_date(value: Any) -> date | None:
    """ISO date or timestamp text (…Z allowed) → date; anything else → None."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    text = str(value).strip().replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(text).date()
    except ValueError:
        try:
            return date.fromisoformat(text[:10])
        except ValueError:
            return None


def price_problem(price_per_hour: Any, accelerators: int | None, currency: str | None) -> str | None:
    """Why a price can't be used, or None when it is a plausible USD hourly price."""
    if currency != "USD":
        return f"currency is {currency!r}, not USD"
    if isinstance(price_per_hour, bool):  # float(True) is 1.0: a boolean is not a price
        return f"price {price_per_hour!r} is a boolean, not a number"
    try:
        price = float(price_per_hour)
    except (TypeError, ValueError):
        return f"price {price_per_hour!r} is not a number"
    if math.isnan(price) or math.isinf(price):
        return f"price {price_per_hour!r} is not a finite number"
    if price <= 0:
        return f"zero or negative price {price}"
    if price in PLACEHOLDER_PRICES_USD:
        return f"placeholder price {price} (a catalog's 'no price here' value, not a list price)"
    if not accelerators or accelerators < 1:
        return f"unknown accelerator count per instance ({accelerators!r})"
    per_accelerator = price / accelerators
    if per_accelerator > MAX_PLAUSIBLE_PER_ACCELERATOR_HOUR_USD:
        return (f"absurd price: {per_accelerator:.2f} USD per accelerator-hour is above "
                f"{MAX_PLAUSIBLE_PER_ACCELERATOR_HOUR_USD:.0f}")
    return None


class PriceCollector:
    """Collects price and quarantine rows for one raw file of one source."""

    def __init__(self, source: str, file: str = "", source_url: str = "", price_source: str = "api"):
        if price_source not in PRICE_SOURCES:
            raise ValueError(f"price_source {price_source!r} is not one of {PRICE_SOURCES}")
        self.source = source
        self.file = file
        self.source_url = source_url
        self.price_source = price_source
        self.prices: list[dict[str, Any]] = []
        self.quarantined: list[dict[str, Any]] = []
        self.skipped_non_accelerator = 0

    def quarantine(self, record: str, reason: str, payload: Any) -> None:
        self.quarantined.append({
            "source": self.source, "file": self.file, "record": record,
            "reason": reason, "payload": payload if isinstance(payload, str) else payload_text(payload),
        })

    def record(self, ref: str, payload: Any, parse: Callable[..., None], *args: Any) -> None:
        """Run `parse(*args)` for one raw record. A record whose shape the parser does not expect
        (a list where an object belongs, a field of the wrong type, ...) becomes one quarantine row
        with the reason, and whatever rows it had added are taken back."""
        prices, quarantined = len(self.prices), len(self.quarantined)
        try:
            parse(*args)
        except MALFORMED as error:
            del self.prices[prices:], self.quarantined[quarantined:]
            self.quarantine(ref, f"malformed record ({type(error).__name__}: {str(error)[:200]})", payload)

    def skip_non_accelerator(self, n: int = 1) -> None:
        self.skipped_non_accelerator += n

    def add_price(
        self, *, provider: str, sku: str, region: str, pricing_model: str,
        accelerator: str | None, accelerators_per_instance: int | None, price_per_hour: Any,
        currency: str | None, unit: str, effective_date: Any, raw_ref: str, payload: Any,
        source_url: str | None = None,
    ) -> bool:
        """Add a price row, or quarantine it with the reason; True when it became a price."""
        if pricing_model not in PRICING_MODELS:
            self.quarantine(raw_ref, f"unknown pricing model {pricing_model!r}", payload)
            return False
        if not accelerator:
            self.quarantine(raw_ref, f"no accelerator alias for SKU {sku!r}", payload)
            return False
        problem = price_problem(price_per_hour, accelerators_per_instance, currency)
        if problem:
            self.quarantine(raw_ref, problem, payload)
            return False
        price = float(price_per_hour)
        self.prices.append({
            "provider": provider, "sku": sku, "region": region, "pricing_model": pricing_model,
            "accelerator": accelerator, "accelerators_per_instance": int(accelerators_per_instance),
            "price_per_hour_usd": price,
            "price_per_accelerator_hour_usd": price / int(accelerators_per_instance),
            "effective_date": to_date(effective_date), "currency": currency, "unit": unit,
            "source_url": source_url if source_url is not None else self.source_url,
            "raw_ref": raw_ref, "price_source": self.price_source,
        })
        return True

    def result(self) -> ParsedPrices:
        prices = pl.DataFrame(self.prices, schema=PRICE_SCHEMA, orient="row") if self.prices \
            else pl.DataFrame(schema=PRICE_SCHEMA)
        prices, duplicates = split_duplicate_keys(prices)
        for row in duplicates.iter_rows(named=True):
            self.quarantine(row["raw_ref"], "duplicate price for the same provider/sku/region/pricing_model "
                            "(first one kept)", row)
        quarantine = pl.DataFrame(self.quarantined, schema=PARSED_QUARANTINE_SCHEMA, orient="row") if self.quarantined \
            else pl.DataFrame(schema=PARSED_QUARANTINE_SCHEMA)
        return ParsedPrices(prices, quarantine, self.skipped_non_accelerator)


def split_duplicate_keys(prices: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(first row per price key, the later rows with the same key)."""
    if prices.is_empty():
        return prices, prices
    first = pl.int_range(pl.len()).over(list(PRICE_KEY)) == 0
    return prices.filter(first), prices.filter(~first)


def concat_parsed(parts: list[ParsedPrices], source: str = "prices") -> ParsedPrices:
    """Combine the results of several raw files (pages) of one source, re-checking keys."""
    prices = pl.concat([p.prices for p in parts]) if parts else pl.DataFrame(schema=PRICE_SCHEMA)
    quarantine = pl.concat([p.quarantine for p in parts]) if parts else pl.DataFrame(schema=PARSED_QUARANTINE_SCHEMA)
    prices, duplicates = split_duplicate_keys(prices)
    if not duplicates.is_empty():
        extra = pl.DataFrame([
            {"source": source, "file": "", "record": row["raw_ref"],
             "reason": "duplicate price for the same provider/sku/region/pricing_model across pages "
                       "(first one kept)",
             "payload": payload_text(row)}
            for row in duplicates.iter_rows(named=True)
        ], schema=PARSED_QUARANTINE_SCHEMA, orient="row")
        quarantine = pl.concat([quarantine, extra])
    return ParsedPrices(prices, quarantine, sum(p.skipped_non_accelerator for p in parts))


def load_json(body: bytes | str, what: str) -> Any:
    """json.loads (nesting depth capped) with a message that names the response (a truncated body
    is the usual cause)."""
    from pipelines.lib.io.jsonsafe import JSONTooDeep, loads_bounded

    try:
        return loads_bounded(body)
    except JSONTooDeep as error:
        raise ValueError(f"{what}: {error}") from error
    except ValueError as error:
        raise ValueError(f"{what}: body is not valid JSON (truncated or not JSON?): {error}") from error
