"""The suite is the unit: each suite's Dagster pieces come from its Suite entry alone (`defs/rounds`), so a suite
nobody has seen gets its own partitions, assets, job and schedule, and a suite without rules no rules asset."""

from __future__ import annotations

import dataclasses

import dagster as dg

from pipelines.defs.rounds.assets import SUITE_ROUNDS, round_assets
from pipelines.lib.mlperf.suites import INFERENCE, SUITES, TRAINING


def _names(pieces) -> list[str]:
    return [asset.key.to_user_string() for asset in pieces.assets]


def test_every_suite_has_its_pieces_named_by_its_domain():
    assert set(SUITE_ROUNDS) == set(SUITES)
    for name, suite in SUITES.items():
        pieces = SUITE_ROUNDS[name]
        expected = [f"{suite.domain}_results_archive", *([f"{suite.domain}_rules_archive"] if suite.has_rules else []),
                    f"{suite.domain}_round_tables"]
        assert _names(pieces) == expected
        assert pieces.partitions.name == suite.definitions.partitions
        assert pieces.job.name == f"{suite.domain}_round_job"
        assert (pieces.rules_archive is not None) == suite.has_rules
    assert not INFERENCE.has_rules and SUITE_ROUNDS[INFERENCE.name].rules_archive is None


def test_a_suite_nobody_has_seen_gets_its_own_pieces():
    storage = dataclasses.replace(
        INFERENCE, name="storage", repository="storage_results", staged_prefix="storage_", label="Storage",
        definitions=dataclasses.replace(INFERENCE.definitions, partitions="mlperf_storage_round",
                                        round_tables="One MLPerf Storage round's staged tables."))
    pieces = round_assets(storage)
    assert _names(pieces) == ["storage_results_archive", "storage_round_tables"]
    assert pieces.partitions.name == "mlperf_storage_round" and pieces.job.name == "storage_round_job"
    assert not set(_names(pieces)) & {n for p in SUITE_ROUNDS.values() for n in _names(p)}
    # every piece loads together with the suites there are: no name collides
    assets = [a for p in [*SUITE_ROUNDS.values(), pieces] for a in p.assets]
    needed = {key for asset in assets for key in asset.required_resource_keys} - {"io_manager"}
    dg.Definitions(assets=assets, jobs=[p.job for p in [*SUITE_ROUNDS.values(), pieces]],
                   resources={key: dg.ResourceDefinition.none_resource() for key in needed}).get_repository_def()
    assert TRAINING.has_rules and _names(round_assets(TRAINING)) == _names(SUITE_ROUNDS[TRAINING.name])
