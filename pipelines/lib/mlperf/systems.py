"""System descriptions (`systems/<system>.json`, or v0.5/v0.6 `results/<system>/entry.json`)."""

from __future__ import annotations

import re

from ..jsonsafe import JSONTooDeep, loads_bounded

# Misspellings seen in published systems files, mapped to the schema's key.
_KEY_ALIASES = {
    "accelerator_per_node": "accelerators_per_node",
    "accelerators_per_nodes": "accelerators_per_node",
    "number_of_node": "number_of_nodes",
    "num_nodes": "number_of_nodes",
    "accelerator_model": "accelerator_model_name",
    "accelerator_name": "accelerator_model_name",
    "host_processor_model": "host_processor_model_name",
    "host_processors_model_name": "host_processor_model_name",
    "host_processor_per_node": "host_processors_per_node",
    "system": "system_name",
    "frameworks": "framework",
}

# What the official summarizer requires of a system file before it prints a row for it.
OFFICIAL_REQUIRED = (
    "division", "status", "submitter", "system_name", "host_processor_model_name",
    "number_of_nodes", "host_processor_core_count", "host_processors_per_node",
    "accelerator_model_name", "accelerators_per_node", "framework", "hw_notes", "sw_notes",
)

_AVAILABILITY = [
    (re.compile(r"on[\s_-]*prem|available on|^available$|^onprem", re.I), "available_on_premise"),
    (re.compile(r"cloud", re.I), "available_cloud"),
    (re.compile(r"preview", re.I), "preview"),
    (re.compile(r"research|rdi|internal|development", re.I), "rdi"),
    (re.compile(r"available", re.I), "available_on_premise"),
]


def normalize_key(key: str) -> str:
    k = re.sub(r"[\s\-]+", "_", str(key).strip().lower())
    return _KEY_ALIASES.get(k, k)


def to_count(value) -> int | None:
    """Counts arrive as 8, "8", 8.0, "8.0", " 8 " or "-": an integer, or None if not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value) if float(value).is_integer() and value >= 0 else None
    text = str(value).strip().replace(",", "")
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() and number >= 0 else None


def normalize_division(value) -> str | None:
    """'closed', 'Closed ', 'close' (seen in v1.0) → 'closed'; 'open' → 'open'; anything else kept as text."""
    text = (_text(value) or "").lower()
    if text.startswith("clos"):
        return "closed"
    if text.startswith("open"):
        return "open"
    return text or None


def availability_category(status: str | None) -> str | None:
    if not status:
        return None
    for pattern, category in _AVAILABILITY:
        if pattern.search(status):
            return category
    return "unknown"


def _text(value) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _from_entry_json(doc: dict) -> dict:
    """v0.5/v0.6 `entry.json`: hardware in `nodes[]`."""
    nodes = doc.get("nodes") if isinstance(doc.get("nodes"), list) and doc.get("nodes") else [{}]
    first = nodes[0] if isinstance(nodes[0], dict) else {}
    return {
        "division": doc.get("division"),
        "status": doc.get("status"),
        "system_name": doc.get("hardware"),
        "framework": doc.get("framework"),
        "number_of_nodes": sum(to_count(n.get("num_nodes")) or 0 for n in nodes if isinstance(n, dict)) or None,
        "accelerators_per_node": first.get("num_accelerators"),
        "accelerator_model_name": first.get("accelerator"),
        "host_processor_model_name": first.get("cpu"),
    }


def parse_system(data: bytes, submitter: str, system: str) -> dict:
    """One normalized system row. Raises ValueError with a clear reason if the file is unusable."""
    try:
        doc = loads_bounded(data.decode("utf-8-sig", errors="replace"))
    except JSONTooDeep as exc:
        raise ValueError(f"system description: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"system description is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ValueError("system description is not a JSON object")
    raw_keys = list(doc)
    if "nodes" in doc and "accelerators_per_node" not in doc:
        doc = _from_entry_json(doc)
    fields: dict = {}
    repaired = []
    for key, value in doc.items():
        norm = normalize_key(key)
        if norm != key:
            repaired.append(f"{key}->{norm}")
        fields.setdefault(norm, value)
    per_node = to_count(fields.get("accelerators_per_node"))
    nodes = to_count(fields.get("number_of_nodes"))
    status = _text(fields.get("status"))
    return {
        "submitter": submitter,
        "system": system,
        "system_name": _text(fields.get("system_name")) or system,
        "submitter_declared": _text(fields.get("submitter")),
        "division": normalize_division(fields.get("division")),
        "availability": status,
        "availability_category": availability_category(status),
        "accelerator_model_name": _text(fields.get("accelerator_model_name")),
        "accelerators_per_node": per_node,
        "number_of_nodes": nodes,
        "accelerator_count": per_node * nodes if per_node is not None and nodes is not None else None,
        "host_processor_model_name": _text(fields.get("host_processor_model_name")),
        "host_processors_per_node": to_count(fields.get("host_processors_per_node")),
        "framework": _text(fields.get("framework")),
        # The official summarizer prints no row for a system whose file lacks one of these keys.
        "official_fields_missing": ",".join(k for k in OFFICIAL_REQUIRED if k not in raw_keys) or None,
        "repaired_keys": ",".join(repaired) or None,
    }
