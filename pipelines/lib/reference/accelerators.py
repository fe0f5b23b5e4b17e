"""Map accelerator names (MLPerf systems files, cloud SKUs) onto `dim_accelerator` keys.

Two seed files live beside this module:

- `accelerators.csv`: one row per accelerator model (the seed of `dim_accelerator`), with the
  `model_number` (h100, mi300x, gaudi2, tpu-v5p ...) and `form_factor` (sxm, sxm2, sxm3, pcie,
  nvl, oam, or empty when the model has one) that the naming rule below matches on. Rows of one
  model are listed most common variant first: that one is chosen when a name does not say more.
- `accelerator_aliases.csv`: overrides and cloud SKUs, (accelerator, alias_kind, pattern, match, ...)
  rows. `alias_kind` is `mlperf_name` (the `accelerator_model_name` of a systems file),
  `mlperf_system_name` (a fallback on the system name) or `cloud_sku` (Azure armSkuName, AWS instance
  type, GCP machine type / TPU slice type / Billing SKU description, OCI shape).
  `match` is `exact` (string equality after stripping) or `regex` (a Python/RE2 regular
  expression that must match the WHOLE string; case-insensitivity is written into the pattern
  as `(?i)` so that DuckDB's `regexp_full_match` gives the same answer).
  Exact rows are tried first, then regex rows in file order: the first match wins.
  A row with an empty `accelerator` deliberately maps a name to nothing (CPU-only systems):
  that is a decision, distinct from a name nobody has looked at.
  `accelerators_per_instance` gives the count for a cloud SKU; TPU slice types instead capture
  `(?P<slice>\\d+)` and divide it by `slice_units_per_accelerator` (v2-v5p slices count
  TensorCores, two per chip; v5e/v6e slices count chips).

MLPerf names are mapped by RULE, not by a list of spellings (`parse_accelerator_name`): the name
is normalised (case, (R)/(TM), power figures, punctuation), the vendor is read from a vendor word
or from the shape of the model number, then the model number (H100, A10G, MI350X, Gaudi 2,
TPU v6e / Trillium, GC200, Ascend 910, Trainium2 ...), the form factor (SXM/SXM2/SXM3, PCIe, NVL,
OAM) and the memory (80GB, 80 GB, 32G). The key is the `accelerators.csv` row of that vendor and
model number whose form factor agrees (and memory, when stated); a model number we have no row for
gets a key derived by the rule (`amd-mi350x` style: vendor-model number), so it maps and shows up
in dim_accelerator with NULL peaks, which the `accelerators_without_peak` check names.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pipelines.lib.io.package_data import package_path

ACCELERATORS_CSV = package_path(__package__, "accelerators.csv")
ALIASES_CSV = package_path(__package__, "accelerator_aliases.csv")

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


VENDORS = ("nvidia", "amd", "intel", "google", "graphcore", "huawei", "aws")


@dataclass(frozen=True)
class CatalogRow:
    """What the naming rule needs of one `accelerators.csv` row."""
    accelerator: str
    vendor: str  # the key's vendor slug (nvidia, amd, ...)
    model_number: str
    form_factor: str  # "" when the model comes in one form
    memory_gb: float | None


def read_catalog(path: Path = ACCELERATORS_CSV) -> list[CatalogRow]:
    rows = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = row["accelerator"].strip()
            memory = (row.get("memory_gb") or "").strip()
            rows.append(CatalogRow(
                accelerator=key, vendor=key.split("-", 1)[0],
                model_number=(row.get("model_number") or "").strip().lower(),
                form_factor=(row.get("form_factor") or "").strip().lower(),
                memory_gb=float(memory) if memory else None,
            ))
    return rows


@dataclass(frozen=True)
class ParsedName:
    """An accelerator name read by the rule: vendor, model number, form factor, memory."""
    vendor: str
    model_number: str
    form_factor: str | None = None
    memory_gb: int | None = None


# A word naming the vendor (or a product line only one vendor sells). Checked in the order the
# words appear in the name, so "NVIDIA H100 with Intel Xeon hosts" is read as NVIDIA.
_VENDOR_WORDS = {
    "nvidia": r"NVIDIA|TESLA|GEFORCE|QUADRO|(?<![A-Z])RTX|(?<![A-Z])[DH]GX(?![A-Z])",
    "amd": r"(?<![A-Z])AMD(?![A-Z])|INSTINCT|RADEON",
    "intel": r"INTEL|HABANA|GAUDI|(?<![A-Z])HL[\s-]*[23][02]5",
    "google": r"GOOGLE|(?<![A-Z])TPU|TRILLIUM|IRONWOOD",
    "graphcore": r"GRAPHCORE|(?<![A-Z])IPU|(?<![A-Z])BOW(?![A-Z])|GC200|COLOSSUS",
    "huawei": r"HUAWEI|ASCEND",
    "aws": r"TRAINIUM|(?<![A-Z])TRN\d",
}
_NOT_ALNUM_BEFORE = r"(?<![A-Z0-9])"
_NOT_ALNUM_AFTER = r"(?![A-Z0-9])"


def _nvidia(text: str) -> str | None:
    rules = [
        (rf"{_NOT_ALNUM_BEFORE}(G[BH]\d{{3}})(?!\d)", lambda m: m[1]),                # GB200, GB300, GH200
        (r"GRACE[\s-]*HOPPER", lambda m: "gh200"),                                     # "Grace Hopper Superchip"
        (r"RTX[\s-]*PRO[\s-]*(\d{4})", lambda m: f"rtx-pro-{m[1]}"),                  # RTX PRO 6000 (Blackwell)
        (r"RTX[\s-]*(A\d{4})", lambda m: f"rtx-{m[1]}"),                              # RTX A5000
        (r"RTX[\s-]*(\d{4})[\s-]*ADA", lambda m: f"rtx-{m[1]}-ada"),                  # RTX 6000 Ada
        (r"RTX[\s-]*(\d{4})(?:[\s-]*(TI|SUPER))?(?![A-Z0-9])",
         lambda m: f"rtx-{m[1]}" + (f"-{m[2]}" if m[2] else "")),                     # GeForce RTX 4090
        (rf"{_NOT_ALNUM_BEFORE}([ABHLTVPK]\d{{1,3}}[A-Z]?){_NOT_ALNUM_AFTER}", lambda m: m[1]),  # H100 A10G L40S T4
        (rf"{_NOT_ALNUM_BEFORE}([ABHV]\d{{3}})(?!\d)", lambda m: m[1]),               # glued: H100NVL, A100SXM4
    ]
    for pattern, model in rules:
        found = re.search(pattern, text)
        if found:
            return model(found)
    return None


def _amd(text: str) -> str | None:
    found = re.search(rf"{_NOT_ALNUM_BEFORE}MI[\s-]*(\d{{2,3}}[A-Z]?){_NOT_ALNUM_AFTER}", text)
    if found:
        return f"mi{found[1]}"
    found = re.search(r"RX[\s-]*(\d{4})(?:[\s-]*(XTX|XT|GRE))?(?![A-Z0-9])", text)
    if found:
        return f"radeon-rx-{found[1]}" + (f"-{found[2]}" if found[2] else "")
    found = re.search(r"PRO[\s-]*(W\d{4}[A-Z]?)", text)
    return f"radeon-pro-{found[1]}" if found else None


def _intel(text: str) -> str | None:
    found = re.search(r"GAUDI[\s-]*(\d)?(?!\d)", text)
    if found:
        return f"gaudi{found[1] or ''}"
    found = re.search(r"HL[\s-]*(205|225|325)", text)  # Habana card part numbers: HL-205, HL-225H, HL-325L
    if found:
        return {"205": "gaudi", "225": "gaudi2", "325": "gaudi3"}[found[1]]
    found = re.search(r"MAX[\s-]*(\d{4})", text)  # Data Center GPU Max 1550
    if found:
        return f"gpu-max-{found[1]}"
    found = re.search(r"ARC[\s-]*(PRO[\s-]*)?([AB]\d{2,3})", text)  # Arc Pro B60
    return f"arc-{'pro-' if found[1] else ''}{found[2]}" if found else None


def _google(text: str) -> str | None:
    if re.search(r"IRONWOOD|TPU[\s-]*7X", text):
        return "tpu-v7"
    if "TRILLIUM" in text:
        return "tpu-v6e"
    found = re.search(r"TPU[\s-]*V?(\d)[\s-]*(LITEPOD|LITE|E|P|X)?(?![A-Z])", text)
    if not found:
        return None
    version, suffix = found[1], found[2] or ""
    if version == "5":
        return {"P": "tpu-v5p", "E": "tpu-v5e", "LITE": "tpu-v5e", "LITEPOD": "tpu-v5e"}.get(suffix, "tpu-v5")
    if version == "6":
        return "tpu-v6e"  # the only v6 (Trillium)
    return f"tpu-v{version}"


def _graphcore(text: str) -> str | None:
    if re.search(r"(?<![A-Z])BOW(?![A-Z])", text):
        return "bow"
    if re.search(r"GC2(?!\d)|MK1", text):
        return "gc2"
    if re.search(r"GC200|MK2|(?<![A-Z])IPU", text):
        return "gc200"  # the IPU of every Graphcore MLPerf submission before Bow
    return None


def _huawei(text: str) -> str | None:
    found = re.search(r"ASCEND[\s-]*(\d{3}[A-Z]?\d?)", text)
    return f"ascend-{found[1]}" if found else None


def _aws(text: str) -> str | None:
    found = re.search(r"TRAINIUM[\s-]*(\d)?|(?<![A-Z])TRN(\d)", text)
    if not found:
        return None
    generation = found[1] or found[2] or "1"
    return "trainium" if generation == "1" else f"trainium{generation}"


_MODEL_READERS = {"nvidia": _nvidia, "amd": _amd, "intel": _intel, "google": _google,
                  "graphcore": _graphcore, "huawei": _huawei, "aws": _aws}
# Model-number shapes that name their vendor when no vendor word is present ("A100-SXM4-40GB").
_VENDOR_BY_SHAPE = ("nvidia", "amd", "google")


def normalise_name(name: str) -> str:
    """Upper case; (R), (TM), power figures ('400W'), underscores and repeated spaces removed."""
    text = name.upper()
    text = re.sub(r"\((?:R|TM|C)\)|®|™", " ", text)
    text = re.sub(r"(?<![A-Z0-9])\d{2,4}\s*W(?![A-Z0-9])", " ", text)  # (400W), 700 W
    text = text.replace("_", " ")
    return re.sub(r"\s+", " ", text).strip()


def _form_factor(text: str) -> str | None:
    if re.search(r"NVL", text):
        return "nvl"
    found = re.search(r"SXM(\d?)(?!\d)", text)  # SXM4 is sxm4; the 80 of "SXM-80GB" is memory
    if found:
        return f"sxm{found[1] or ''}"
    if re.search(r"PCI[\s-]*E|(?<![A-Z])PCI(?![A-Z])", text):
        return "pcie"
    if re.search(r"(?<![A-Z])OAM(?![A-Z])", text):
        return "oam"
    return None


def _memory_gb(text: str) -> int | None:
    found = re.search(r"(?<![A-Z0-9.])(\d{1,3})\s*G(?:I?B)?(?![A-Z0-9])", text)
    return int(found[1]) if found else None


def parse_accelerator_name(name: str | None, vendors: tuple[str, ...] = VENDORS) -> ParsedName | None:
    """The rule: vendor, model number, form factor and memory of an accelerator name, or None."""
    text = normalise_name(name or "")
    if not text:
        return None
    mentioned = sorted(
        (found.start(), vendor) for vendor, words in _VENDOR_WORDS.items() if vendor in vendors
        for found in [re.search(words, text)] if found
    )
    order = [vendor for _, vendor in mentioned]
    if not order:  # no vendor word: the model number's shape decides (A100-SXM4-40GB, MI300X)
        order = [vendor for vendor in _VENDOR_BY_SHAPE if vendor in vendors]
    for vendor in order:
        model = _MODEL_READERS[vendor](text)
        if model:
            model = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
            return ParsedName(vendor, model, _form_factor(text), _memory_gb(text))
    return None


class AcceleratorMatcher:
    """Exact overrides, then the naming rule, then regex alias rows (first match wins)."""

    def __init__(self, aliases: list[Alias], catalog: list[CatalogRow] | None = None):
        self._exact: dict[str, dict[str, Alias]] = {kind: {} for kind in ALIAS_KINDS}
        self._regex: dict[str, list[Alias]] = {kind: [] for kind in ALIAS_KINDS}
        for alias in aliases:
            if alias.match == "exact":
                self._exact[alias.alias_kind].setdefault(alias.pattern, alias)
            else:
                self._regex[alias.alias_kind].append(alias)
        self._catalog: dict[tuple[str, str], list[CatalogRow]] = {}
        for row in catalog if catalog is not None else read_catalog():
            self._catalog.setdefault((row.vendor, row.model_number), []).append(row)
        # why: the AWS offer file repeats a few hundred instance types across ~10^6 products
        self.cloud_sku = lru_cache(maxsize=8192)(self._cloud_sku)
        self.rule = lru_cache(maxsize=4096)(self._rule)

    def _find(self, kind: str, text: str, *, regex: bool = True) -> tuple[Alias, re.Match[str] | None] | None:
        text = (text or "").strip()
        alias = self._exact[kind].get(text)
        if alias is not None:
            return alias, None
        for alias in self._regex[kind] if regex else ():
            found = alias.regex.fullmatch(text)
            if found:
                return alias, found
        return None

    def key_for(self, parsed: ParsedName) -> str:
        """The catalog row of this vendor and model number that fits the name, or a derived key."""
        rows = self._catalog.get((parsed.vendor, parsed.model_number))
        if not rows:
            return f"{parsed.vendor}-{parsed.model_number}"
        if parsed.form_factor:
            form = parsed.form_factor
            rows = [r for r in rows if not r.form_factor or form.startswith(r.form_factor)
                    or r.form_factor.startswith(form)]
            if not rows:  # a form factor of a known model we hold no row for
                return f"{parsed.vendor}-{parsed.model_number}-{form}"
        if parsed.memory_gb is not None:
            same_memory = [r for r in rows if r.memory_gb == parsed.memory_gb]
            rows = same_memory or rows  # a misremembered size (H100 NVL "96GB") is still that model
        return rows[0].accelerator

    def _rule(self, name: str, vendors: tuple[str, ...] = VENDORS) -> str | None:
        parsed = parse_accelerator_name(name, vendors)
        return self.key_for(parsed) if parsed else None

    def mlperf_alias(self, name: str | None, system_name: str | None = None) -> Alias | None:
        """The alias row that decides `name` when no rule does (deliberately unmapped, or a regex row)."""
        hit = self._find("mlperf_name", name or "")
        if hit and hit[0].accelerator != UNMAPPED:
            return hit[0]
        if system_name:
            by_system = self._find("mlperf_system_name", system_name)
            if by_system:
                return by_system[0]
        return hit[0] if hit else None

    def mlperf(self, name: str | None, system_name: str | None = None) -> str | None:
        """The accelerator key for an MLPerf `accelerator_model_name`, or None.

        Order: an exact override; the naming rule on the name; a regex alias row; for a name that
        says only 'TPU' (or 'Google TPU'), the rule restricted to TPUs on the system name
        (v1.0 Google: 'TPU' + 'tpu-v4-1024')."""
        text = (name or "").strip()
        exact = self._find("mlperf_name", text, regex=False)
        if exact:
            return exact[0].accelerator or None
        key = self.rule(text)
        says_only_tpu = key in (None, "google-tpu-v5") and re.search(_VENDOR_WORDS["google"], normalise_name(text))
        if system_name and says_only_tpu:
            by_system = self.rule(system_name, ("google",))
            if by_system:
                return by_system
        if key:
            return key
        alias = self.mlperf_alias(text, system_name)
        if alias is None or alias.accelerator == UNMAPPED:
            return None
        return alias.accelerator

    def is_deliberately_unmapped(self, name: str | None, system_name: str | None = None) -> bool:
        if self.mlperf(name, system_name) is not None:
            return False
        alias = self.mlperf_alias(name, system_name)
        return alias is not None and alias.accelerator == UNMAPPED

    def _cloud_sku(self, sku: str) -> SkuMatch | None:
        hit = self._find("cloud_sku", sku)
        if hit is None and _GPU_BILLING_DESCRIPTION.fullmatch(sku or ""):
            key = self.rule(sku)  # GCP Billing GPU SKUs are priced per GPU
            return SkuMatch(key, 1) if key else None
        if not hit or hit[0].accelerator == UNMAPPED:
            return None
        alias, found = hit
        count = alias.accelerators_per_instance
        if count is None and found is not None and "slice" in found.groupdict():
            units = int(found.group("slice"))
            count = max(1, units // (alias.slice_units_per_accelerator or 1))
        return SkuMatch(alias.accelerator, count)


# "Nvidia L4 GPU running in Americas": a per-GPU price; not licences, commitments or reservations.
_GPU_BILLING_DESCRIPTION = re.compile(
    r"(?i)(?!.*(workstation|licen[cs]e|commit|reserv|dws|calendar))nvidia\s.*\bgpu\b.*\brunning in\b.*"
)


@lru_cache(maxsize=1)
def default_matcher() -> AcceleratorMatcher:
    return AcceleratorMatcher(read_aliases(), read_catalog())


def match_mlperf_accelerator(name: str | None, system_name: str | None = None) -> str | None:
    return default_matcher().mlperf(name, system_name)


def match_cloud_sku(sku: str) -> SkuMatch | None:
    return default_matcher().cloud_sku(sku)
