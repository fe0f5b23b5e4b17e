"""The published Training, HPC and Inference results as MLCommons' `summary_results.json`: one record per
published result,
with the field names and types of the file MLCommons publishes for Inference (and its results-site
template loads), so the same tooling reads Training.

Each field is listed once, in SUMMARY_FIELDS (name, type, meaning); the records are built from the public
tables only, and `check_record` holds every record to the list (a test does, on every record written).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb

from pipelines.lib.mlperf.suites import HPC, INFERENCE, TRAINING
from pipelines.lib.warehouse.models import sql_dir

GITHUB = "https://github.com/mlcommons/{repository}_{round}"
SUMMARY_FILE = "summary_results.json"

# (field, type, meaning). Types are JSON's as Python reads them; None is allowed where noted.
SUMMARY_FIELDS: list[tuple[str, type, str]] = [
    ("ID", str, "round and a number, e.g. 4.1-0001; HPC: hpc-3.0-0001 (stable for one build: ordered by submitter, "
                "system, benchmark)"),
    ("Submitter", str, "the submitter, as its results folder spells it"),
    ("Availability", str, "available, preview or rdi (research, development, internal), from the systems file"),
    ("Category", str, "the division: closed or open"),
    ("Suite", str, "training or hpc; Inference: datacenter or edge, as MLCommons' table"),
    ("System", str, "the system's name (systems file)"),
    ("Platform", str, "the system's results folder (the systems file's stem)"),
    ("UsedModel", str, "the benchmark"),
    ("Model", str, "the benchmark"),
    ("Scenario", str, "Inference: Offline, Server, Interactive, SingleStream or MultiStream; empty for Training; "
                      "HPC: strong or weak (scaling)"),
    ("Accuracy", str, "empty: a Training result reached its target quality by definition (Inference: not read)"),
    ("Nodes", int, "nodes (systems file; 0 when unknown)"),
    ("Processor", str, "the host processor (systems file)"),
    ("host_processors_per_node", int, "host processors per node (0 when unknown)"),
    ("Accelerator", str, "the accelerator, as the systems file names it"),
    ("a#", int, "accelerators per node, as MLCommons' table counts them (× Nodes: the system's; 0 for CPU-only "
                "or unknown)"),
    ("Location", str, "the result's folder in the round's repository"),
    ("Software", str, "the framework (systems file)"),
    ("Notes", str, "why the warehouse has no score or energy, where it has none (else empty)"),
    ("version", str, "the round, e.g. v4.1"),
    ("has_power", bool, "the result has an energy to train (Inference: a measured power)"),
    ("Details", str, "the systems file at MLCommons"),
    ("Code", str, "the result logs at MLCommons"),
    ("Unique ID (e.g. for Audit)", str, "<suite>/<division>/<submitter>/<system>/<benchmark> (HPC: "
                                        "hpc/<division>/<submitter>/<system>/<scale>/<benchmark>)"),
    ("ColorKey", str, "availability and submitter, as the results site colours rows"),
    ("Performance_Result", float, "the official score, minutes to train (as MLCommons published it); HPC weak "
                                  "scaling: models trained per minute"),
    ("Performance_Units", str, "minutes, or models/min (HPC weak scaling); Inference: the units MLCommons' table "
                               "labels the result with (fct_inference_result.mlcommons_units)"),
    ("Power_Result", float, "energy to train, joules (present only with has_power); Inference: the audited "
                            "average power, W, as MLCommons' table publishes it"),
    ("Power_Units", str, "Joules; Inference: Watts (present only with has_power)"),
]
OPTIONAL = frozenset({"Power_Result", "Power_Units"})


_AVAILABILITY = {"cloud": "available", "on-premise": "available", "preview": "preview", "research": "rdi"}


# HPC and Inference systems files state availability (their `status`) in words of their own ("available", "onprem", ...)
_STATUS_AVAILABILITY = {"available": "available", "onprem": "available", "on-premise": "available", "cloud": "available",
                     "preview": "preview", "research": "rdi", "rdi": "rdi"}


def export_query(suite: str) -> str:
    """The query of one suite's records (`sql/exports/mlcommons_summary_<suite>.sql`, its header says what it
    reads and its grain)."""
    return (sql_dir() / "exports" / f"mlcommons_summary_{suite}.sql").read_text(encoding="utf-8")


def summary_records(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """One record per published result of the warehouse behind `con`: Training's, HPC's, then Inference's."""
    return _training_records(con) + _hpc_records(con) + _inference_records(con)


_LATENCY_SCENARIOS = ("SingleStream", "MultiStream")


def _inference_records(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    records = []
    for r in _rows(con, export_query(INFERENCE.name), optional=True):  # absent: published before Inference was loaded
        repo = GITHUB.format(repository="inference_results", round=r["round"])
        # datacenter for a datacenter system's Offline/Server/Interactive results, else edge (MLCommons' split)
        suite = ("datacenter" if "datacenter" in (r["system_type"] or "") and r["scenario"] not in _LATENCY_SCENARIOS
                 else "edge")
        folder = "/".join(r["location"].split("/")[:4])
        records.append(_record(r, f"inference-{r['round'].lstrip('v')}", _status_availability(r), {
            "Category": r["division"], "Suite": suite, "System": r["system_name"], "Platform": r["system"],
            "UsedModel": r["location"].split("/")[4], "Model": r["model"], "Scenario": r["scenario"],
            "Location": r["location"], "Software": r["software"] or "",
            "Notes": (r["power_null_reason"] or "") if r["power_submission"] else "",
            "has_power": r["power_w"] is not None,
            "Details": f"{repo}/tree/main/{folder}", "Code": f"{repo}/tree/main/{r['division']}/{r['submitter']}/code",
            "Unique ID (e.g. for Audit)": f"{suite}/{r['division']}/{r['submitter']}/{r['system']}",
            "Performance_Result": float(r["performance_result"]), "Performance_Units": r["mlcommons_units"],
        } | ({"Power_Result": float(r["power_w"]), "Power_Units": "Watts"} if r["power_w"] is not None else {})))
    return records


def _hpc_records(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    records = []
    for r in _rows(con, export_query(HPC.name), optional=True):  # absent: published before HPC was loaded
        repo = GITHUB.format(repository=HPC.repository, round=r["round"])
        division = r["division"] or "unknown"
        folder = f"{r['submitter']}/results/{r['system']}/" + ("" if r["scale_implied"] else f"{r['scale']}/")
        weak = r["scale"] == "weak"
        records.append(_record(r, f"hpc-{r['round'].lstrip('v')}", _status_availability(r), {
            "Category": division, "Suite": HPC.name, "System": r["system_name"] or r["system"], "Platform": r["system"],
            "UsedModel": r["benchmark"], "Model": r["benchmark"], "Scenario": r["scale"],
            "Location": folder + r["benchmark"], "Software": r["framework"] or "",
            "Notes": r["energy_null_reason"] or "", "has_power": False,
            "Details": f"{repo}/blob/main/{r['submitter']}/systems/{r['system']}.json",
            "Code": f"{repo}/tree/main/{folder}{r['benchmark']}",
            "Unique ID (e.g. for Audit)": f"{HPC.name}/{division}/{r['submitter']}/{r['system']}/{r['scale']}/{r['benchmark']}",
            "Performance_Result": float(r["models_per_minute"] if weak else r["score_minutes"]),
            "Performance_Units": "models/min" if weak else "minutes",
        }))
    return records


def _training_records(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    records = []
    for r in _rows(con, export_query(TRAINING.name)):
        repo = GITHUB.format(repository=TRAINING.repository, round=r["round"])
        division = r["division"] or "unknown"
        records.append(_record(r, r["round"].lstrip("v"), _AVAILABILITY.get(r["availability_category"] or "", "unknown"), {
            "Category": division, "Suite": TRAINING.name, "System": r["system_name"] or r["system"],
            "Platform": r["system"], "UsedModel": r["benchmark"], "Model": r["benchmark"], "Scenario": "",
            "Location": f"{r['submitter']}/results/{r['system']}/{r['benchmark']}", "Software": r["framework"] or "",
            "Notes": r["energy_null_reason"] or "", "has_power": r["energy_to_train_j"] is not None,
            "Details": f"{repo}/blob/main/{r['submitter']}/systems/{r['system']}.json",
            "Code": f"{repo}/tree/main/{r['submitter']}/results/{r['system']}/{r['benchmark']}",
            "Unique ID (e.g. for Audit)": f"{TRAINING.name}/{division}/{r['submitter']}/{r['system']}/{r['benchmark']}",
            "Performance_Result": float(r["score_minutes"]), "Performance_Units": "minutes",
        } | ({"Power_Result": float(r["energy_to_train_j"]), "Power_Units": "Joules"}
             if r["energy_to_train_j"] is not None else {})))
    return records


def _rows(con: duckdb.DuckDBPyConnection, sql: str, optional: bool = False) -> Iterator[dict[str, Any]]:
    """The rows of `sql` as dicts, each with `number`, its place in its round (1, 2, ...). `optional`: none
    when a table the query reads does not exist (a suite that was never loaded)."""
    try:
        cursor = con.execute(sql)
    except duckdb.CatalogException:
        if not optional:
            raise
        return
    names, numbers = [d[0] for d in cursor.description], {}
    for values in cursor.fetchall():
        row = dict(zip(names, values, strict=True))
        row["number"] = numbers[row["round"]] = numbers.get(row["round"], 0) + 1
        yield row


def _status_availability(row: dict[str, Any]) -> str:
    return _STATUS_AVAILABILITY.get((row["availability"] or "").strip().lower(), "unknown")


def _record(row: dict[str, Any], id_prefix: str, availability: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A record: the suite's `fields` with what every suite takes alike from the systems file (submitter,
    availability, nodes, processors, accelerators), in SUMMARY_FIELDS' order."""
    common = {
        "ID": f"{id_prefix}-{row['number']:04d}", "Submitter": row["submitter"], "Availability": availability,
        "Accuracy": "", "Nodes": int(row["number_of_nodes"] or 0), "Processor": row["host_processor_model_name"] or "",
        "host_processors_per_node": int(row["host_processors_per_node"] or 0),
        "Accelerator": row["accelerator_model_name"] or "", "a#": int(row["accelerators_per_node"] or 0),
        "version": row["round"], "ColorKey": f"{availability}{row['submitter']}",
    }
    merged = common | fields
    ordered = {name: merged[name] for name, _, _ in SUMMARY_FIELDS if name in merged}
    return ordered | merged  # a name that is no summary field stays, for check_record to name


def check_record(record: dict[str, Any]) -> list[str]:
    """What is wrong with a record against SUMMARY_FIELDS (empty: nothing)."""
    problems = []
    known = {name for name, _, _ in SUMMARY_FIELDS}
    for name, kind, _ in SUMMARY_FIELDS:
        if name not in record:
            if name not in OPTIONAL or record.get("has_power"):
                problems.append(f"{name} missing")
            continue
        value = record[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            continue
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            problems.append(f"{name} is {type(value).__name__}, not {kind.__name__}")
    problems += [f"{name} is not a summary field" for name in record if name not in known]
    return problems
