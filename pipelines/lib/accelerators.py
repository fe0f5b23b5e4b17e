"""Map accelerator names (MLPerf systems files, cloud SKUs) onto `dim_accelerator` keys.

Two seed files live beside this module:

- `accelerators.csv`: one row per accelerator model (the seed of `dim_accelerator`).
- `accelerator_aliases.csv`: (accelerator, alias_kind, pattern, match, ...) rows.
  `alias_kind` is `mlperf_name` (the `accelerator_model_name` of a systems file),
  `mlperf_system_name` (a fallback on the system name, used only when the accelerator name
  says nothing more than e.g. "TPU") or `cloud_sku` (Azure armSkuName, AWS instance type,
  GCP machine type / TPU slice type / Billing SKU description, OCI shape).
  `match` is `exact` (string equality after stripping) or `regex` (a Python/RE2 regular
  expression that must match the WHOLE string; case-insensitivity is written into the pattern
  as `(?i)` so that DuckDB's `regexp_full_match` gives the same answer).
  Exact rows are tried first, then regex rows in file order: the first match wins, so the
  specific patterns (H100 NVL) sit above the general ones (H100).
  A row with an empty `accelerator` deliberately maps a name to nothing (CPU-only systems):
  that is a decision, distinct from a name nobody has looked at.
  `accelerators_per_instance` gives the count for a cloud SKU; TPU slice types instead capture
  `(?P<slice>\\d+)` and divide it by `slice_units_per_accelerator` (v2-v5p slices count
  TensorCores, two per chip; v5e/v6e slices count chips).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

LIB_DIR = Path(__file__).resolve().parent
ACCELERATORS_CSV = LIB_DIR / "accelerators.csv"
ALIASES_CSV = LIB_DIR / "accelerator_aliases.csv"

ALIAS_KINDS = ("mlperf_name", "mlperf_system_name", "cloud_sku")
UNMAPPED = ""  # the `accelerator` value of a deliberate "maps to nothing" row


@dataclass(frozen=True)
class Alias:
    accelerator: str  # "" for a deliberate non-accelerator
    alias_kind: str
    pattern: str
    match: str
    accelerators_per_instance: int | None
    slice_units_per_accelerator: int | None
    note: str
    regex: re.Pattern[str] | None


@dataclass(frozen=True)
class SkuMatch:
    accelerator: str
    accelerators_per_instance: int | None


def _int_or_none(text: str) -> int | None:
    text = (text or "").strip()
    return int(text) if text else None


def read_aliases(path: Path = ALIASES_CSV) -> list[Alias]:
    aliases = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            kind, match = row["alias_kind"].strip(), row["match"].strip()
            if kind not in ALIAS_KINDS or match not in ("exact", "regex"):
                raise ValueError(f"{path.name}: bad alias row {row}")
            aliases.append(
                Alias(
                    accelerator=row["accelerator"].strip(),
                    alias_kind=kind,
                    pattern=row["pattern"] if match == "regex" else row["pattern"].strip(),
                    match=match,
                    accelerators_per_instance=_int_or_none(row.get("accelerators_per_instance", "")),
                    slice_units_per_accelerator=_int_or_none(row.get("slice_units_per_accelerator", "")),
                    note=row.get("note", ""),
                    regex=re.compile(row["pattern"]) if match == "regex" else None,
                )
            )
    return aliases


class AcceleratorMatcher:
    """First-match-wins lookup over the alias table (exact rows before regex rows)."""

    def __init__(self, aliases: list[Alias]):
        self._exact: dict[str, dict[str, Alias]] = {kind: {} for kind in ALIAS_KINDS}
        self._regex: dict[str, list[Alias]] = {kind: [] for kind in ALIAS_KINDS}
        for alias in aliases:
            if alias.match == "exact":
                self._exact[alias.alias_kind].setdefault(alias.pattern, alias)
            else:
                self._regex[alias.alias_kind].append(alias)
        # why: the AWS offer file repeats a few hundred instance types across ~10^6 products
        self.cloud_sku = lru_cache(maxsize=8192)(self._cloud_sku)

    def _find(self, kind: str, text: str) -> tuple[Alias, re.Match[str] | None] | None:
        text = (text or "").strip()
        alias = self._exact[kind].get(text)
        if alias is not None:
            return alias, None
        for alias in self._regex[kind]:
            found = alias.regex.fullmatch(text)
            if found:
                return alias, found
        return None

    def mlperf_alias(self, name: str | None, system_name: str | None = None) -> Alias | None:
        """The alias row that decides `name` (falling back on the system name for 'TPU')."""
        hit = self._find("mlperf_name", name or "")
        if hit and hit[0].accelerator != UNMAPPED:
            return hit[0]
        if system_name:
            by_system = self._find("mlperf_system_name", system_name)
            if by_system:
                return by_system[0]
        return hit[0] if hit else None

    def mlperf(self, name: str | None, system_name: str | None = None) -> str | None:
        """The accelerator key for an MLPerf `accelerator_model_name`, or None."""
        alias = self.mlperf_alias(name, system_name)
        if alias is None or alias.accelerator == UNMAPPED:
            return None
        return alias.accelerator

    def is_deliberately_unmapped(self, name: str | None, system_name: str | None = None) -> bool:
        alias = self.mlperf_alias(name, system_name)
        return alias is not None and alias.accelerator == UNMAPPED

    def _cloud_sku(self, sku: str) -> SkuMatch | None:
        hit = self._find("cloud_sku", sku)
        if not hit or hit[0].accelerator == UNMAPPED:
            return None
        alias, found = hit
        count = alias.accelerators_per_instance
        if count is None and found is not None and "slice" in found.groupdict():
            units = int(found.group("slice"))
            count = max(1, units // (alias.slice_units_per_accelerator or 1))
        return SkuMatch(alias.accelerator, count)


@lru_cache(maxsize=1)
def default_matcher() -> AcceleratorMatcher:
    return AcceleratorMatcher(read_aliases())


def match_mlperf_accelerator(name: str | None, system_name: str | None = None) -> str | None:
    return default_matcher().mlperf(name, system_name)


def match_cloud_sku(sku: str) -> SkuMatch | None:
    return default_matcher().cloud_sku(sku)
