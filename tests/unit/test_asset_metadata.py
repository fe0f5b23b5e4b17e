"""Asset metadata is typed: what an asset records is read back by the same class, or fails naming the key."""

import dagster as dg
import pytest

from pipelines.defs.metadata import ArchiveFetched, PricesStaged, RoundStaged, RulesFetched


def test_metadata_round_trips_through_dagster_values():
    fetched = ArchiveFetched("http://127.0.0.1/a.tar.gz", True, "ab" * 32, 123)
    recorded = fetched.as_metadata()
    assert isinstance(recorded["url"], dg.UrlMetadataValue)
    assert ArchiveFetched.from_metadata(recorded) == fetched
    staged = RoundStaged(skipped=False, runs=5, systems=2, scaling_files=1, quarantined=0, parse_seconds=0.5)
    assert RoundStaged.from_metadata(staged.as_metadata()) == staged


def test_optional_fields_default_and_required_ones_are_named():
    assert RulesFetched.from_metadata({"ref": "none", "why": "v0.5"}).in_rules_table is True
    assert PricesStaged.from_metadata({"skipped": "no key", "rows": 0}).pages == 0
    with pytest.raises(KeyError, match="RoundStaged: metadata lacks runs"):
        RoundStaged.from_metadata({"skipped": True, "systems": 1, "scaling_files": 0, "quarantined": 0,
                                   "parse_seconds": 0.0})
