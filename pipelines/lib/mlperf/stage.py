"""Fetch and stage one round: the plain functions behind the Dagster assets."""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

import duckdb
import polars as pl

from pipelines.lib.io.http import fetch_to_file
from pipelines.lib.io.limits import LIMITS, limit
from pipelines.lib.io.package_data import package_path
from pipelines.lib.io.paths import ensure_inside, published_db, raw_dir, staging_dir
from pipelines.lib.io.retry import RetryPolicy
from pipelines.lib.io.sidecars import FetchResult, recorded_sha256
from pipelines.lib.mlperf.compliance import validate_ruleset
from pipelines.lib.mlperf.inference_checker import FACTS_CSV, LOADGEN_KEYS_CSV
from pipelines.lib.mlperf.precision import PRECISION_SPELLINGS_CSV
from pipelines.lib.mlperf.rcp_records import rcp_rules
from pipelines.lib.mlperf.rejections import NoResultLogs, RoundRejected
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.rounds import archive_url
from pipelines.lib.mlperf.rules import (
    RulesRef,
    check_pinned,
    current_rules_missing,
    folder_is_own,
    listed_ref,
    package_ruleset,
    read_rules_archive,
    ref_for_round,
    rules_url,
    ruleset_from_archive,
    scored_by_rules,
)
from pipelines.lib.mlperf.rules_releases import GitHubSource, discovery_sources, record_resolution, resolve_rules
from pipelines.lib.mlperf.suites import HPC, INFERENCE, TRAINING, Suite
from pipelines.lib.mlperf.tables import SUITE_FRAMES, rules_frame, suite_tables
from pipelines.lib.reference.seeds import BENCHMARK_DATASETS_CSV, BENCHMARKS_CSV, INFERENCE_MODELS_CSV
from pipelines.lib.reference.sources import DEFAULT_GITHUB_API_URL
from pipelines.lib.staging.files import staged_files, write_staged

_SAFE_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# A round whose results that count shrink by more than this share against the published build is
# refused (its previous data stays) unless the shrink is accepted.
# (`max_shrink` in pipelines/lib/io/limits.py, with every other limit.)
DEFAULT_MAX_SHRINK = LIMITS["max_shrink"][0]


class RoundShrank(RoundRejected):
    """The round's results that count shrank sharply against the published build."""



# Data the parsers read, which decides what is staged: each benchmark's convergence unit (benchmarks.csv) and
# training-set sizes (benchmark_datasets.csv) classify how a log counts progress (runs.py); the precision
# spellings map a log's statement; the Inference checker's facts, LoadGen keys and models decide each value.
_CODE_FILES = sorted(Path(__file__).parent.glob("*.py")) + [
    package_path("schemas", "mlperf.py"), BENCHMARKS_CSV, BENCHMARK_DATASETS_CSV, PRECISION_SPELLINGS_CSV,
    INFERENCE_MODELS_CSV, FACTS_CSV, LOADGEN_KEYS_CSV]


def parser_version() -> str:
    """Changes when the parsing code or the official rules package changes: staged data is redone."""
    digest = hashlib.sha256(metadata.version("mlperf-logging").encode())
    for path in _CODE_FILES:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def archive_path(round_version: str, base: Path, suite: Suite = TRAINING) -> Path:
    return ensure_inside(raw_dir("mlperf", base) / f"{suite.repository}_{round_version}.tar.gz", base)


def rules_archive_path(ref: str, base: Path) -> Path:
    if not _SAFE_REF.match(ref):
        raise ValueError(f"not a usable git ref for the rules archive: {ref!r}")
    return ensure_inside(raw_dir("rules", base) / f"logging-{ref}.tar.gz", base)


@dataclass(frozen=True)
class RulesFetch:
    """The rules archive of a round: the ref that scores it and how it was found, the download, how its
    content is trusted, whether the ref ships the round's own rule folder, and what was tried on the way."""

    ref: RulesRef
    fetched: FetchResult
    trust: str
    folder: str
    notes: tuple[str, ...] = ()
    current_missing: str | None = None  # why today's rules give the round no verdict (current_rules_missing)

    @property
    def provisional(self) -> bool:
        return self.ref.provisional


def fetch_rules(round_version: str, url_template: str, base: Path, policy: RetryPolicy, *,
                default_ref: str | None = None, suite: Suite = TRAINING, github: GitHubSource | None = None,
                trusted_refs: frozenset[str] = frozenset()) -> RulesFetch | None:
    """The `mlcommons/logging` archive at the ref the round is scored with (None when no rules release judges
    the round): the reviewed table's ref, else the one `resolve_rules` finds (recorded for staging, its content
    pinned on first use)."""
    if not scored_by_rules(round_version, suite):
        return None
    # a rules archive has its own, much smaller, limit than a results archive
    policy = replace(policy, max_bytes=min(policy.max_bytes or limit("max_rules_download_bytes"),
                                           limit("max_rules_download_bytes")))
    fetched: dict[str, FetchResult] = {}

    def fetch(ref: str) -> FetchResult:
        if ref not in fetched:
            dest = rules_archive_path(ref, base)
            dest.parent.mkdir(parents=True, exist_ok=True)
            fetched[ref] = fetch_to_file(rules_url(url_template, ref), dest, policy=policy)
        return fetched[ref]

    ref, notes = listed_ref(round_version, suite), []
    if ref is None:
        ref, notes = resolve_rules(round_version, suite, github or GitHubSource(DEFAULT_GITHUB_API_URL),
                                   default_ref=default_ref, folders_of=lambda r: read_rules_archive(fetch(r).path).folders,
                                   base=base)
    result = fetch(ref.ref)
    ruleset = ruleset_from_archive(result.path, ref.ref, round_version, suite)
    ref = replace(ref, provisional=not folder_is_own(ruleset.folder, round_version, suite))
    trust = check_pinned(ruleset, trusted_refs, used_for=suite.round_label(round_version), base=base)
    if not ref.listed:
        record_resolution(ref, suite, base)
    return RulesFetch(ref, result, trust, ruleset.folder, tuple(notes), current_rules_missing(round_version, suite))


def round_rules(round_version: str, base: Path, trusted_refs: frozenset[str] = frozenset(),
                suite: Suite = TRAINING) -> RoundRules:
    """The round's rules as published (from its fetched rules archive, whose content must be the one it is
    pinned to: rules_refs.csv's, or the warehouse's record for a ref trusted on first use, unless its ref is in
    `trusted_refs`) and today's (the package)."""
    ref = ref_for_round(round_version, suite, base)
    if ref is None:
        return RoundRules(None, None)
    path = rules_archive_path(ref.ref, base)
    if not path.exists():
        raise FileNotFoundError(f"the rules archive of {round_version} (ref {ref.ref}) has not been fetched")
    published = ruleset_from_archive(path, ref.ref, round_version, suite)
    # today's rules, unless the package ships none of the round: then no other round's rules are loaded
    missing = current_rules_missing(round_version, suite)
    current = None if missing else package_ruleset(round_version, suite)
    check_pinned(published, trusted_refs, used_for=suite.round_label(round_version), base=base)
    for ruleset in filter(None, (published, current)):  # every snippet in the rule language, or no scores
        validate_ruleset(ruleset)
    release = read_rules_archive(path)
    checker = (rcp_rules(release.rcp_files, release.rcp_checker_source, suite.name, published.folder, ref.ref)
               if suite is TRAINING else None)
    return RoundRules(published, current, checker, missing)


def fetch_round(round_version: str, url_template: str, base: Path, policy: RetryPolicy,
                suite: Suite = TRAINING) -> FetchResult:
    dest = archive_path(round_version, base, suite)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if policy.max_bytes is None:  # an archive's own limit, not that of any other response
        policy = replace(policy, max_bytes=limit(suite.archive_limit))
    return fetch_to_file(archive_url(url_template, round_version), dest, policy=policy)


@dataclass
class StageResult:
    skipped: bool
    row_counts: dict[str, int]
    quarantine_count: int
    seconds: float
    archive_sha256: str


def _marker(round_version: str, base: Path, suite: Suite = TRAINING) -> Path:
    return staging_dir("_meta", base) / f"{suite.quarantine_prefix}{round_version}.json"


def _sha256(path: Path) -> str:
    """The digest recorded while the file was downloaded, else computed now (a file put there by hand)."""
    sha = recorded_sha256(path)
    if sha is None:
        if not path.exists():
            raise FileNotFoundError(f"{path.name} has not been fetched")
        with open(path, "rb") as fh:
            sha = hashlib.file_digest(fh, "sha256").hexdigest()
    return sha


def scored_results(runs: pl.DataFrame) -> int:
    """Results (submitter, system[, scale], benchmark) with at least one run that counts as published."""
    keys = [c for c in ("division", "submitter", "system", "scale", "benchmark", "model", "scenario") if c in runs.columns]
    return runs.filter(pl.col("drop_reason").is_null()).select(keys).n_unique()


# How the published warehouse counts each suite's results that count (a build without the table compares with nothing).
_PUBLISHED_RESULTS = {
    TRAINING.name: "select count(distinct (submitter, system, benchmark)) from fct_training_run where round = ? and scored",
    HPC.name: "select count(distinct (submitter, system, scale, benchmark)) from fct_hpc_run where round = ? and scored",
    INFERENCE.name: "select count(*) from fct_inference_result where round = ? and valid",
}


def published_scored_results(round_version: str, base: Path, suite: Suite = TRAINING) -> int | None:
    """The same count in the published warehouse, or None when there is none to compare with."""
    db = published_db(base)
    if not db.exists():
        return None
    try:
        con = duckdb.connect(str(db), read_only=True)
        try:
            return con.execute(_PUBLISHED_RESULTS[suite.name], [round_version]).fetchone()[0]
        finally:
            con.close()
    except duckdb.Error:
        return None  # an unreadable published file is the recovery path's business, not a reason to refuse


def _guard(round_version: str, frames: dict[str, pl.DataFrame], base: Path, max_shrink: float, accept_shrink: bool,
           suite: Suite = TRAINING):
    runs = frames[suite.staged(suite.runs_table)]
    if runs.height == 0:  # logs there were, but every one was refused or failed validation
        raise NoResultLogs(
            f"{round_version}: none of the archive's result logs could be loaded (each was refused or "
            "quarantined: see fct_quarantine); the previous data of the round is kept"
        )
    before, now = published_scored_results(round_version, base, suite), scored_results(runs)
    if before and not accept_shrink and now < before * (1 - max_shrink):
        raise RoundShrank(
            f"{round_version}: results with runs that count fell from {before} to {now} "
            f"(more than {max_shrink:.0%}); the previous data is kept. If upstream really changed, "
            "refresh with --accept-shrink"
        )


def stage_round(round_version: str, base: Path, *, max_shrink: float = DEFAULT_MAX_SHRINK,
                accept_shrink: bool = False, trusted_rules_refs: frozenset[str] = frozenset(),
                suite: Suite = TRAINING) -> StageResult:
    """Parse the round's archive into staged Parquet, unless the same archive was staged by this code.
    Refuses (RoundRejected, nothing written) an archive with no result logs or one whose results
    that count shrink by more than `max_shrink` against the published build."""
    archive = archive_path(round_version, base, suite)
    sha = _sha256(archive)
    ref = ref_for_round(round_version, suite, base)
    tables = suite_tables(suite)
    # The rules are read only when the round is parsed: their archive's digest (and, through
    # parser_version, the package's version) says whether they changed.
    rules_key = f"{ref.ref}:{_sha256(rules_archive_path(ref.ref, base))}" if ref and suite.has_rules else "no rules"
    version = f"{parser_version()}-{rules_key}"
    marker = _marker(round_version, base, suite)
    if marker.exists():
        previous = json.loads(marker.read_text())
        staged = all(any(p.stem == round_version for p in staged_files(t, base)) for t in tables)
        if staged and previous.get("archive_sha256") == sha and previous.get("parser_version") == version:
            return StageResult(True, previous["row_counts"], previous["quarantine_count"], 0.0, sha)
    started = time.perf_counter()
    rules = round_rules(round_version, base, trusted_rules_refs, suite)  # none for Inference
    frames = SUITE_FRAMES[suite.name](archive, round_version, rules)
    if suite.has_rules:
        frames[suite.staged("rules")] = rules_frame(_rules_row(round_version, ref, rules, suite, base, trusted_rules_refs))
    _guard(round_version, frames, base, max_shrink, accept_shrink, suite)
    for table in tables:
        write_staged(table, round_version, frames[table], base)
    write_staged("quarantine", f"{suite.quarantine_prefix}{round_version}", frames["quarantine"], base)
    counts = {table: frames[table].height for table in tables}
    result = StageResult(False, counts, frames["quarantine"].height, time.perf_counter() - started, sha)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({
        "archive_sha256": sha, "parser_version": version, "row_counts": counts,
        "quarantine_count": result.quarantine_count,
    }))
    return result


def _rules_row(round_version: str, ref: RulesRef | None, rules: RoundRules, suite: Suite, base: Path,
               trusted_refs: frozenset[str]) -> dict:
    """The row of `<suite>_rules`: what judged the round, how the ref was found, how it is trusted."""
    published = rules.published
    if ref is None or published is None:
        return {"round": round_version, "provisional": False, "why": "no rules release judges this round: every run "
                "must start, stop and succeed (Training v0.5 predates the releases)"}
    own = folder_is_own(published.folder, round_version, suite)
    why = ref.why if own else (f"judged by {published.folder} of {ref.ref[:12]} ({ref.source}), not "
                               f"{suite.round_label(round_version)}'s own rules: {ref.why}")
    return {"round": round_version, "ref": ref.ref, "ref_source": ref.source, "rule_folder": published.folder,
            "provisional": not own, "why": why,
            "trust": check_pinned(published, trusted_refs, used_for=suite.round_label(round_version), base=base)}


def round_sources(round_version: str, url_template: str, rules_template: str, base: Path,
                  suite: Suite = TRAINING, github: GitHubSource | None = None) -> list[tuple[str, Path]]:
    """Every upstream file a round is built from, with its local copy: the results archive and the rules (and,
    for a round whose rules were discovered, the tag listing that found them)."""
    sources = [(archive_url(url_template, round_version), archive_path(round_version, base, suite))]
    ref = ref_for_round(round_version, suite, base)
    if ref is not None:
        sources.append((rules_url(rules_template, ref.ref), rules_archive_path(ref.ref, base)))
    if ref is not None and not ref.listed:  # a new tag or a new head may resolve it anew
        sources += discovery_sources(ref, github or GitHubSource(DEFAULT_GITHUB_API_URL), base)
    return sources
