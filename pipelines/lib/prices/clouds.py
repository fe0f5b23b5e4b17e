"""Which submitters are clouds: the one definition of the native-cloud rule.

`cloud_providers.csv` lists, per price provider, the lower-case fragments of an MLPerf submitter
name that mean "this cloud itself" (Google → gcp, Microsoft/Azure → azure, ...). It is loaded as the
seed table `raw_cloud_provider_seed`; `mart_cost_to_train` applies exactly this rule in SQL, and
`is_native_cloud` below is the same rule for Python callers (tests, the report). A provider absent
from the table has no native submitter.
"""

from __future__ import annotations

import csv
from functools import lru_cache

from pipelines.lib.io.package_data import package_path

CLOUD_PROVIDERS_CSV = package_path(__package__, "cloud_providers.csv")


@lru_cache(maxsize=1)
def submitter_fragments() -> dict[str, tuple[str, ...]]:
    """provider → the submitter name fragments (lower case) that mean that cloud."""
    out: dict[str, list[str]] = {}
    with CLOUD_PROVIDERS_CSV.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            fragment = row["submitter_fragment"].strip().lower()
            if fragment:
                out.setdefault(row["provider"].strip().lower(), []).append(fragment)
    return {provider: tuple(fragments) for provider, fragments in out.items()}


def clouds_of_submitter(submitter: str | None) -> list[str]:
    """The price providers a submitter is (e.g. ['gcp'] for Google; [] for everyone else): the rule."""
    name = (submitter or "").lower()
    return [provider for provider, fragments in submitter_fragments().items() if any(f in name for f in fragments)]


def is_native_cloud(submitter: str | None, provider: str | None) -> bool:
    """A cloud's own submission priced on its own cloud (Google on gcp, whatever the price source)."""
    return (provider or "").lower() in clouds_of_submitter(submitter)


def cloud_of_submitter(submitter: str | None) -> str | None:
    """The first price provider a submitter is, or None."""
    return next(iter(clouds_of_submitter(submitter)), None)
