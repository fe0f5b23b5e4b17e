"""What each asset records about a materialization, typed: the asset writes one of these classes
(`as_metadata`), the CLI's runner reads it back (`from_metadata`), so a key is spelled once and a missing or
renamed one fails loudly instead of reading as None."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Self

import dagster as dg


@dataclass(frozen=True)
class AssetMetadata:
    def as_metadata(self) -> dict:
        """Every value as Dagster records it (its run and event databases, the UI): text redacted (a mirror URL's
        credentials, a secret), whatever storage the instance uses."""
        from pipelines.lib.io.redaction import redact

        return {k: redact(v) if isinstance(v, str) else v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_metadata(cls, values: dict) -> Self:
        """From a materialization's metadata values (MetadataValue objects unwrapped or not)."""
        plain = {k: getattr(v, "value", v) for k, v in values.items()}
        missing = [f.name for f in fields(cls) if f.name not in plain and f.default is MISSING]
        if missing:
            raise KeyError(f"{cls.__name__}: metadata lacks {', '.join(missing)}")
        return cls(**{f.name: plain[f.name] for f in fields(cls) if f.name in plain})


@dataclass(frozen=True)
class ArchiveFetched(AssetMetadata):
    """A downloaded archive (results or rules): its URL, whether it changed upstream, its digest."""

    url: str
    changed: bool
    sha256: str
    bytes: int

    def as_metadata(self) -> dict:
        from pipelines.lib.io.redaction import redact

        return super().as_metadata() | {"url": dg.MetadataValue.url(redact(self.url))}


@dataclass(frozen=True)
class RulesFetched(AssetMetadata):
    """The rules of a round: the mlcommons/logging ref it was scored with ("none" for v0.5), how the ref was
    found (rules_refs.csv, a release tag, the default branch, ...), how its content is trusted, whether it
    ships the round's own rule folder (`provisional` when it does not), and why today's rules give the round
    no verdict (`current_rules_missing`: the pinned package ships none of its rules)."""

    ref: str
    in_rules_table: bool = True
    ref_date: str | None = None
    why: str | None = None
    source: str | None = None
    folder: str | None = None
    provisional: bool = False
    trust: str | None = None
    notes: str | None = None
    current_rules_missing: str | None = None


@dataclass(frozen=True)
class RoundStaged(AssetMetadata):
    """A round parsed, scored and validated into staged tables (or found unchanged and not re-parsed)."""

    skipped: bool
    runs: int
    systems: int
    scaling_files: int
    quarantined: int
    parse_seconds: float


@dataclass(frozen=True)
class PricesStaged(AssetMetadata):
    """One provider's price list of the day, staged; `skipped` says why nothing was fetched."""

    rows: int
    quarantined: int = 0
    pages: int = 0
    skipped: str | None = None
    seconds: float | None = None
    skipped_non_accelerator: int | None = None
    source_url: str | None = None
    staged: str | None = None
    fetched_at: str | None = None
    notes: str | None = None  # what a person should know of the list (the catalog: versions read, new clouds)
    warning: bool = False  # something to look at (a cloud of unknown kind, a version fallen back to)
