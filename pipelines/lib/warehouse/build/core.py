"""The build's core: whether to build at all (the inputs' fingerprint against the published build's), and the
loop that leaves out the rounds whose new data fails a structural test, one DuckDB attempt (`attempt`) at a time.

It calls the store (`store.prepare` before, `store.commit` after); the store never calls back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pipelines.lib.io.paths import builds_dir, ensure_inside, published_db, warehouse_dir
from pipelines.lib.warehouse import store
from pipelines.lib.warehouse.build.attempt import build_attempt, remove_build
from pipelines.lib.warehouse.build.inputs import input_fingerprint
from pipelines.lib.warehouse.build.outcomes import BuildFailed, TestOutcome
from pipelines.lib.warehouse.models import load_models
from pipelines.lib.warehouse.parameters import BuildParameters


@dataclass(frozen=True)
class ModelStats:
    """What one model holds in a finished build: rows and (column name, DuckDB type) in order."""

    rows: int
    columns: list[tuple[str, str]]


@dataclass(frozen=True)
class BuildResult:
    published: bool
    path: Path
    fingerprint: str
    row_counts: dict[str, int]
    skipped: bool = False
    models: dict[str, ModelStats] = field(default_factory=dict)  # per model of a finished build
    tests: list[TestOutcome] = field(default_factory=list)
    build: str | None = None  # the build file's name
    # Rounds whose new data failed a structural test: round → what failed and what the build holds of it
    excluded_rounds: dict[str, str] = field(default_factory=dict)
    # The structural tests that failed on them (in the builds thrown away for it), with their rows
    excluded_outcomes: list[TestOutcome] = field(default_factory=list)

    @property
    def warnings(self) -> list[TestOutcome]:
        """Plausibility tests that found rows (their metrics are nulled or flagged): published anyway."""
        return [t for t in self.tests if not t.passed and t.severity == "plausibility"]


def build(base: Path | None = None, *, force: bool = False, keep: int = store.KEEP_BUILDS,
          parameters: BuildParameters | None = None) -> BuildResult:
    """Build, test and publish, one build at a time per warehouse (others wait for the lock). `parameters`:
    the assumptions the build applies (default: BuildParameters())."""
    from pipelines.lib.io.locking import build_lock

    base = (base or warehouse_dir()).resolve()
    builds_dir(base).mkdir(parents=True, exist_ok=True)
    with build_lock(builds_dir(base)):
        state = store.prepare(base)
        return _build(base, state, force=force, keep=keep, parameters=parameters or BuildParameters())


def _build(base: Path, state: store.StoreState, *, force: bool, keep: int,
           parameters: BuildParameters = BuildParameters()) -> BuildResult:  # noqa: B008 (frozen)
    fingerprint = input_fingerprint(base, parameters)
    target = published_db(base)
    info = state.published
    if not force and target.exists() and info.get("fingerprint") == fingerprint and state.published_ok:
        return BuildResult(False, target, fingerprint, {}, skipped=True,
                           excluded_rounds=dict(info.get("excluded_rounds") or {}))
    dependencies_verified = state.dependencies
    previous = target if state.published_ok else None

    models = load_models()  # raises, loudly, when the package ships no model
    out_dir = builds_dir(base)
    out_dir.mkdir(parents=True, exist_ok=True)
    # A round whose rows fail a structural test is built again from its previously published rows; if
    # those fail too (or there are none), it is left out. Each pass excludes at least one more round.
    excluded: dict[str, str] = {}
    from_previous: set[str] = set()
    excluded_outcomes: dict[str, TestOutcome] = {}
    while True:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        build_path = ensure_inside(out_dir / f"mlperf-{stamp}.duckdb", base)
        excluded_rounds = _excluded_rounds(excluded, from_previous)
        attempt = build_attempt(base, build_path, models, dependencies_verified, fingerprint,
                                excluded_rounds, previous, frozenset(from_previous), parameters=parameters)
        if not attempt.failing_rounds:
            break
        remove_build(build_path)
        excluded_outcomes.update({o.name: o for o in attempt.outcomes if o.blocks and o.name not in excluded_outcomes})
        for round_version, why in attempt.failing_rounds.items():
            if round_version in from_previous:
                from_previous.discard(round_version)
                excluded[round_version] += (f"; its previously published rows fail this build's tests too ({why}): "
                                            "the round is left out")
            elif round_version in excluded:  # left out, yet its rows are still there: cannot happen
                raise BuildFailed(f"warehouse checks failed, nothing published: {why}", attempt.outcomes)
            else:
                excluded[round_version] = why
                if previous is not None:
                    from_previous.add(round_version)
    if excluded and not attempt.counts.get("fct_training_result"):
        remove_build(build_path)
        raise BuildFailed("warehouse checks failed, nothing published: no round is left with results: "
                          + "; ".join(f"{r}: {why}" for r, why in excluded_rounds.items()),
                          list(excluded_outcomes.values()))
    record = {"fingerprint": fingerprint, "build": build_path.name, "built_at": attempt.built_at,
              "row_counts": attempt.counts, "excluded_rounds": excluded_rounds}
    if not store.commit(base, build_path, record, keep, state.verified, attempt.dependencies):
        # a newer build is published (after a clock step back): it stays
        return BuildResult(False, target, fingerprint, attempt.counts, skipped=True)
    stats = {name: ModelStats(attempt.counts[name], attempt.columns[name]) for name in models}
    return BuildResult(True, target, fingerprint, attempt.counts, models=stats, tests=attempt.outcomes,
                       build=build_path.name, excluded_rounds=excluded_rounds,
                       excluded_outcomes=list(excluded_outcomes.values()))


def _excluded_rounds(excluded: dict[str, str], from_previous: set[str]) -> dict[str, str]:
    """round → what failed on its new data and what the build holds of the round instead."""
    return {
        r: why + ("; the previously published rows of the round stay" if r in from_previous
                  else "" if "left out" in why else "; no previously published rows: the round is not in the warehouse")
        for r, why in sorted(excluded.items())
    }

