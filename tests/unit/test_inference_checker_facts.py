"""The submission checker's facts, as data (inference_checker_facts.csv, inference_loadgen_keys.csv): each release
is complete, every value is one the rest of the warehouse allows, and every model it knows is described."""

import csv

from pipelines.lib.mlperf.inference_checker import FACTS_CSV, checker_for, known_versions, loadgen_keys
from pipelines.lib.reference.seeds import INFERENCE_MODELS_CSV
from pipelines.lib.reference.vocabulary import values

LOADGEN_SCENARIOS = ("Offline", "Server", "SingleStream", "MultiStream")  # what LoadGen logs as a run's scenario


def facts() -> list[dict[str, str]]:
    with open(FACTS_CSV, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_every_release_has_its_ref_a_metric_for_every_loadgen_scenario_and_units_for_every_folder():
    assert known_versions()[0] == "v4.0" and len(known_versions()) >= 5
    for version in known_versions():
        checker = checker_for(version)
        assert not checker.assumed and checker.release, version
        for scenario in LOADGEN_SCENARIOS:
            assert checker.metric_key("", scenario)[0], (version, scenario)
        known = [s for s in ("Offline", "Server", "Interactive", "SingleStream", "MultiStream")
                 if checker.knows_scenario(s)]
        assert set(LOADGEN_SCENARIOS) <= set(known), version
        assert all(checker.units_label("", "", s) for s in known), version


def test_every_fact_has_its_source_one_value_and_an_allowed_one():
    rows = facts()
    assert all(r["source"] for r in rows)
    looked_up = [(r["checker"], r["fact"], r["model"], r["scenario"]) for r in rows
                 if r["fact"] not in ("model_alias", "model_guess")]  # several rows a model: lists, not lookups
    assert len(looked_up) == len(set(looked_up))  # a second row would silently replace the first
    keys = loadgen_keys()
    units = set(values("inference_units"))
    for r in rows:
        if r["fact"] == "metric_key":
            assert r["value"] in keys and keys[r["value"]].performance_units in units, r
        if r["fact"] == "units":
            assert r["value"] in units, r
        if r["fact"] in ("ttft_limit_ms", "tpot_limit_ms"):
            assert float(r["value"]) > 0, r
    assert {k.performance_units for k in keys.values()} - {None} <= units
    assert all(k.summary_lines for k in keys.values())  # the summary fallback has a line for every key


def test_token_latency_limits_come_in_pairs():
    for r in facts():
        if r["fact"] == "ttft_limit_ms":
            limits = checker_for(r["checker"]).token_limits(r["model"], r["scenario"], r["scenario"])
            assert limits is not None and limits[0] == float(r["value"]), r


def test_every_model_a_release_knows_is_described():
    with open(INFERENCE_MODELS_CSV, newline="", encoding="utf-8") as fh:
        described = {row["model"] for row in csv.DictReader(fh) if row["task"]}
    known = {r["model"] for r in facts() if r["fact"] == "model"}
    assert known and known <= described, known - described


def test_a_round_between_or_beyond_the_known_ones_takes_the_nearest_older_release():
    versions = known_versions()
    assert checker_for("v99.0").version == versions[-1] and checker_for("v99.0").assumed
    assert checker_for("v4.5").version == "v4.1" and checker_for("v0.5").version == versions[0]
    assert checker_for("not-a-round").assumed
