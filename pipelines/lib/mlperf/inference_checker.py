"""MLCommons' submission checker (`mlcommons/inference`, `tools/submission/`), as data: for each round's checker
release, which LoadGen key is a result's metric, the units MLCommons' table labels it with, how a model folder
maps to the model, which LLMs must meet time-to-first-token and time-per-output-token limits, and what the
checker does when a scenario folder holds another scenario's run (`inference_checker_facts.csv`, one row a fact,
each with the structure of the checker it comes from). What each LoadGen key counts, and the summary line that
prints the same value, is LoadGen's, the same for every round (`inference_loadgen_keys.csv`).

The checker's code is never imported or run: its facts are read here, the arithmetic is in `inference.py`.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from functools import cache

from pipelines.lib.io.package_data import package_path
from pipelines.lib.mlperf.rounds import ROUND_PATTERN, round_sort_key

FACTS_CSV = package_path("pipelines.lib.reference", "inference_checker_facts.csv")
LOADGEN_KEYS_CSV = package_path("pipelines.lib.reference", "inference_loadgen_keys.csv")
FACTS = ("release", "model", "model_alias", "model_guess", "scenario", "metric_key", "units", "units_keyed_by",
         "latency_unit", "token_latency_model", "ttft_limit_ms", "tpot_limit_ms", "token_limits_by",
         "inferred_edge_only", "uninferable_invalid")


@dataclass(frozen=True)
class LoadgenKey:
    key: str
    performance_units: str | None  # what the value counts, as the results table states units; None: no metric
    summary_lines: tuple[str, ...]  # the summary lines printing the same value (older LoadGen spellings too)


@dataclass(frozen=True)
class Checker:
    """One checker release's facts. `version` names the round whose checker they are; `assumed` is True when the
    round asked for has no facts of its own (the nearest known round's are used, and every row says so)."""

    version: str
    assumed: bool
    release: str
    facts: dict[str, dict[tuple[str, str], str]]  # fact → (model, scenario) → value ("" model: every model)
    aliases: dict[str, str]  # model folder → model (the checker's model_mapping)
    guesses: tuple[tuple[str, str], ...]  # (text in the folder name, model), in the checker's order

    def _get(self, fact: str, model: str = "", scenario: str = "") -> str | None:
        return self.facts.get(fact, {}).get((model, scenario))

    def knows_model(self, model: str) -> bool:
        return (model, "") in self.facts.get("model", {})

    def knows_scenario(self, scenario: str) -> bool:
        return self._get("scenario", "", scenario) is not None

    def mlperf_model(self, folder: str, submitter_mapping: dict[str, str] | None) -> tuple[str, str | None]:
        """The model a model folder is, as the checker's get_mlperf_model maps it, and what mapped it (None: the
        folder is the model's own name, or nothing maps it)."""
        if self.knows_model(folder):
            return folder, None
        if folder in self.aliases:
            return self.aliases[folder], f"checker {self.version}'s model_mapping"
        mapped = (submitter_mapping or {}).get(folder)
        if isinstance(mapped, str) and mapped:
            return mapped, "the submitter's model_mapping.json"
        for text, model in self.guesses:
            if text in folder:
                return self.aliases.get(model, model), f"checker {self.version}'s guess from the folder name ({text!r})"
        return folder, None

    def metric_key(self, model: str, logged: str) -> tuple[str | None, bool]:
        """The detail-log key of the metric of a run LoadGen logged in `logged` (the model's own key where the
        checker overwrites the scenario's), and whether it is the model's own."""
        own = self._get("metric_key", model, logged)
        return (own, True) if own else (self._get("metric_key", "", logged), False)

    def units_label(self, model: str, folder: str, scenario: str) -> str | None:
        """The units MLCommons' table labels a result with (log_result's unit dictionaries)."""
        key = folder if self._get("units_keyed_by") == "folder" else model
        return self._get("units", key, scenario) or self._get("units", "", scenario)

    def latency_in_seconds(self, model: str, logged: str) -> bool:
        return self._get("latency_unit", model, logged) == "s"

    def token_latency_model(self, model: str) -> bool:
        return self._get("token_latency_model", model) == "yes"

    def token_limits(self, model: str, folder_scenario: str, logged: str) -> tuple[float, float] | None:
        """(TTFT, TPOT) p99 limits in ms the checker holds the model's run to, or None where it checks none."""
        scenario = logged if self._get("token_limits_by") == "logged" else folder_scenario
        ttft, tpot = self._get("ttft_limit_ms", model, scenario), self._get("tpot_limit_ms", model, scenario)
        return (float(ttft), float(tpot)) if ttft is not None and tpot is not None else None

    @property
    def inferred_edge_only(self) -> bool:
        return self._get("inferred_edge_only") == "yes"

    @property
    def uninferable_invalid(self) -> bool:
        return self._get("uninferable_invalid") == "yes"


def round_order(version: str) -> tuple[int, int] | None:
    """The round's sort key (`rounds.round_sort_key`); None for a version that names no round."""
    return round_sort_key(version) if ROUND_PATTERN.match(version or "") else None


@cache
def _facts() -> dict[str, dict[str, list[tuple[str, str, str]]]]:
    found: dict[str, dict[str, list[tuple[str, str, str]]]] = defaultdict(lambda: defaultdict(list))
    with open(FACTS_CSV, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["fact"] not in FACTS:
                raise ValueError(f"{FACTS_CSV.name}: unknown fact {row['fact']!r} ({row})")
            found[row["checker"]][row["fact"]].append((row["model"], row["scenario"], row["value"]))
    return {version: dict(facts) for version, facts in found.items()}


def known_versions() -> list[str]:
    """The rounds whose checker facts the file holds, oldest first."""
    return sorted(_facts(), key=lambda v: round_order(v) or (0, 0))


@cache
def checker_for(round_version: str) -> Checker:
    """The checker facts of a round: its own, or the nearest known round's (the newest for a round after every
    known one, the oldest for one before), flagged `assumed`."""
    versions = known_versions()
    version, assumed = round_version, False
    if round_version not in versions:
        order = round_order(round_version)
        older = [v for v in versions if order is not None and round_order(v) <= order]
        version, assumed = (older[-1] if older else versions[0]) if order is not None else versions[-1], True
    facts = _facts()[version]
    listed = ("model_alias", "model_guess")  # several rows a model: lists, not lookups
    table = {fact: {(model, scenario): value for model, scenario, value in rows}
             for fact, rows in facts.items() if fact not in listed}
    aliases = {alias: model for model, _, alias in facts.get("model_alias", [])}
    guesses = tuple((text, model) for model, _, text in facts.get("model_guess", []))
    release = next(iter(table.get("release", {}).values()), "")
    return Checker(version, assumed, release, table, aliases, guesses)


@cache
def loadgen_keys() -> dict[str, LoadgenKey]:
    found = {}
    with open(LOADGEN_KEYS_CSV, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            found[row["detail_key"]] = LoadgenKey(row["detail_key"], row["performance_units"] or None,
                                                  tuple(filter(None, row["summary_lines"].split("|"))))
    return found
