"""System descriptions: `systems/<system>.json`; v0.5/v0.6 `results/<system>/entry.json`; and v0.6
NVIDIA `systems/<system>.json` files that are log text (`key: {json}` lines), not JSON."""

from __future__ import annotations

import ast
import re

from pipelines.lib.io.jsonsafe import JSONTooDeep, loads_bounded
from pipelines.lib.mlperf.precision import system_precision

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
    "divison": "division",  # v1.0/v2.1 systems files
    "divsion": "division",
}

# What the official summarizer requires of a system file before it prints a row for it.
OFFICIAL_REQUIRED = (
    "division", "status", "submitter", "system_name", "host_processor_model_name",
    "number_of_nodes", "host_processor_core_count", "host_processors_per_node",
    "accelerator_model_name", "accelerators_per_node", "framework", "hw_notes", "sw_notes",
)

# Availability status text → category (first match wins). A plain "available" says nothing about
# where; from a cloud provider (Google Cloud TPU v1.1/v2.0, Azure, Oracle) it means rentable in
# that cloud, so `availability_category` classes it `cloud`; from anyone else, `on-premise`.
_AVAILABILITY = [
    (re.compile(r"on[\s_-]*prem|available on|^onprem", re.I), "on-premise"),
    (re.compile(r"cloud", re.I), "cloud"),
    (re.compile(r"preview", re.I), "preview"),
    (re.compile(r"research|rdi|internal|development", re.I), "research"),
    (re.compile(r"available", re.I), "available"),  # cloud or on-premise: decided by dim_system
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
    """`cloud`, `on-premise`, `preview`, `research`, `available` (or `unknown`) from the systems file's status.

    A bare "available" stays `available` here: whether that means in the submitter's own cloud is the
    native-cloud rule, which lives once, in SQL (`int_submitter_cloud`, read by `dim_system`).
    """
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


# v0.5 Google entries name a TPU slice (`tpuv3-512`) and give its size as `num_accelerators`: the
# slice counts TensorCores, two per TPU v2/v3 chip, for the whole slice (not per host). Chips are
# what later rounds count (v0.6 `tpu-v3-32` declares 16 accelerators).
_TPU_SLICE = re.compile(r"(?i)^\s*tpu[\s_-]*v([23])[\s_-]+(\d+)\s*$")


def _from_entry_json(doc: dict) -> dict:
    """v0.5/v0.6 `entry.json`: hardware in `nodes[]`; `num_accelerators` is per node."""
    nodes = doc.get("nodes") or [{}]
    if isinstance(nodes, dict):
        nodes = [nodes]
    if not isinstance(nodes, list):
        nodes = [{}]
    first = nodes[0] if isinstance(nodes[0], dict) else {}
    node_count = sum(to_count(n.get("num_nodes")) or 0 for n in nodes if isinstance(n, dict)) or None
    per_node = first.get("num_accelerators")
    slice_ = _TPU_SLICE.match(str(first.get("accelerator") or ""))
    if slice_ and to_count(per_node) == int(slice_.group(2)):
        chips = int(slice_.group(2)) // 2
        hosts = node_count or 1
        node_count, per_node = (hosts, chips // hosts) if chips % hosts == 0 else (1, chips)
    return {
        "division": doc.get("division"),
        "status": doc.get("status"),
        "system_name": doc.get("hardware"),
        "submitter": doc.get("submitter") or doc.get("org"),
        "framework": doc.get("framework"),
        "number_of_nodes": node_count,
        "accelerators_per_node": per_node,
        "accelerator_model_name": first.get("accelerator"),
        "host_processor_model_name": first.get("cpu"),
    }


_LOG_TEXT_LINE = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*:\s*(\{.*\})\s*$")


def _literal(value):
    """v0.6 NVIDIA systems nest Python reprs (`"{'nodes': \"{'num_nodes': '32'}\"}"`) in JSON strings."""
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


def _from_log_text(text: str) -> dict | None:
    """v0.6 NVIDIA `systems/*.json`: lines `key: {"value": ..., "metadata": ...}` as their logs print
    them; `entry` holds the v0.5-style entry (hardware, framework, nodes) as a Python repr."""
    values = {}
    for line in text.splitlines():
        m = _LOG_TEXT_LINE.match(line)
        if not m:
            continue
        try:
            record = loads_bounded(m.group(2))
        except ValueError:  # not JSON, or nested too deeply
            continue
        if isinstance(record, dict) and "value" in record:
            values[m.group(1)] = record["value"]
    if not values:
        return None
    entry = _literal(values.get("entry"))
    entry = entry if isinstance(entry, dict) else {}
    entry = {k: _literal(v) for k, v in entry.items()}
    doc = {
        "division": values.get("division"),
        "status": values.get("status"),
        "submitter": values.get("org"),
        "hardware": values.get("platform") or entry.get("hardware"),
        "framework": entry.get("framework"),
        "nodes": entry.get("nodes") or [{}],
    }
    return doc


def parse_system(data: bytes, submitter: str, system: str) -> dict:
    """One normalized system row. Raises ValueError with a clear reason if the file is unusable."""
    text = data.decode("utf-8-sig", errors="replace")
    try:
        doc = loads_bounded(text)
    except JSONTooDeep as exc:
        raise ValueError(f"system description: {exc}") from exc
    except ValueError as exc:
        doc = _from_log_text(text)
        if doc is None:
            raise ValueError(f"system description is not valid JSON (nor `key: {{json}}` log lines): {exc}") from exc
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
        "system_type": _text(fields.get("system_type")),  # Inference: datacenter, edge or both
        # The official summarizer prints no row for a system whose file lacks one of these keys.
        "official_fields_missing": ",".join(k for k in OFFICIAL_REQUIRED if k not in raw_keys) or None,
        "repaired_keys": ",".join(repaired) or None,
        **dict(zip(("precision_stated", "precision_evidence"), system_precision(doc), strict=False)),
    }
