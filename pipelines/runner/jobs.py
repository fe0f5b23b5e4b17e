"""Run a refresh in-process with the definitions' own jobs (operations/jobs.py), on the persistent
instance that `dg dev` shows: one round job run per round of each suite the settings load (training_round_job
for Training, hpc_round_job for HPC, ...), one prices_job run for today, one warehouse_job run, then one
outputs_job run after a publish.

The jobs' resources are built by the same functions the definitions use, from the settings given
(`pipelines/settings.py`; the CLI's carry its flags), and are passed to the runs as resource overrides."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict

import dagster as dg

from pipelines.lib.io.paths import published_db, warehouse_dir
from pipelines.lib.mlperf.suites import SUITES, TRAINING, RoundKey, Suite
from pipelines.lib.staging.files import staged_files
from pipelines.lib.warehouse.coverage import round_coverage
from pipelines.lib.warehouse.summary import RefreshSummary, StepOutcome, check_detail
from pipelines.runner.runs import job_resources, materialized_metadata, run_error, run_job
from pipelines.settings import Settings, apply, load_settings


def refresh(settings: Settings | None = None, **kwargs) -> RefreshSummary:
    """Fetch and stage the rounds of each suite the settings load (`settings.sources.loaded()`) and the prices,
    build, check and publish; the outcome is recorded for `status`.
    `settings`: the operator's (default: read from the environment now), applied to this process. The keywords
    are `_refresh_on`'s: the instance, progress, retry backoff, price sources, prices on or off."""
    from pipelines.lib.io.locking import refresh_lock, remove_stale_files
    from pipelines.lib.warehouse.status import record_refresh_outcome

    kwargs["settings"] = apply(settings or load_settings())

    with refresh_lock(warehouse_dir()), _team_writer():  # a second refresh (here, or on the team catalog) stops
        remove_stale_files(warehouse_dir())
        try:
            summary = _refresh(**kwargs)
        except BaseException as exc:
            record_refresh_outcome(None, False, f"refresh crashed: {type(exc).__name__}: {exc}")
            raise
        record_refresh_outcome(None, summary.ok, summary.render(), steps=[asdict(s) for s in summary.steps],
                               published=summary.published)
        return summary


def _team_writer():
    """The team catalog's advisory lock, held for the whole refresh when team mode is on: a refresh on another
    machine stops at once, before fetching anything (the lake's publish takes it again, re-entrantly)."""
    from pipelines.lib.warehouse.team import team_catalog

    catalog = team_catalog()
    if catalog is None:
        return nullcontext()
    from pipelines.lib.warehouse.catalog_lock import catalog_lock

    return catalog_lock(catalog.url, "refresh")


def _refresh(*, instance: dg.DagsterInstance | None = None, **kwargs) -> RefreshSummary:
    from pipelines.runner.instance import warehouse_instance

    with nullcontext(instance) if instance is not None else warehouse_instance() as active:
        return _refresh_on(active, **kwargs)


def _refresh_on(
    instance: dg.DagsterInstance,
    *,
    settings: Settings,
    prices: bool = True,
    progress: Callable[[str], None] = lambda _: None,
    backoff_seconds: float = 1.0,
    price_sources=None,
) -> RefreshSummary:
    from pipelines.defs.rounds.assets import SUITE_ROUNDS
    from pipelines.defs.rounds.migration import migrate_training_names
    from pipelines.defs.warehouse.models import warehouse_models

    summary = RefreshSummary()
    started = time.perf_counter()
    migrated = migrate_training_names(instance, warehouse_dir())  # before any partition or staged file is read
    if migrated:
        summary.steps.append(StepOutcome("migration", True, time.perf_counter() - started, migrated))
        progress(f"migrated: {migrated}")
    wanted_by_suite = settings.sources.loaded()
    for suite, wanted in wanted_by_suite:
        partitions = SUITE_ROUNDS[suite.name].partitions
        instance.add_dynamic_partitions(
            partitions.name, [r for r in wanted if not instance.has_dynamic_partition(partitions.name, r)])
    resources = job_resources(settings, backoff_seconds=backoff_seconds, price_sources=price_sources)
    steps = [(suite, r) for suite, wanted in wanted_by_suite for r in wanted]
    for index, (suite, round_version) in enumerate(steps, 1):
        label = suite.round_label(round_version)
        progress(f"[{index}/{len(steps)}] {label}: fetching and parsing ...")
        started = time.perf_counter()
        result = run_job(SUITE_ROUNDS[suite.name].job.name, instance, resources, partition_key=round_version,
                         debug=settings.debug)
        seconds = time.perf_counter() - started
        unreachable = warns = False
        if result.success:
            detail, warns = _round_detail(materialized_metadata(result), suite)
        else:
            detail, unreachable = run_error(result)
        summary.steps.append(StepOutcome(f"results {label}", result.success, seconds, detail, warning=warns,
                                         unreachable=unreachable, suite=suite.name))
        progress(f"[{index}/{len(steps)}] {label}: {'ok' if result.success else 'FAILED'} in {seconds:.1f}s; {detail}")

    if prices:
        from pipelines.runner.price_steps import refresh_prices

        summary.steps.extend(refresh_prices(instance, resources, progress, debug=settings.debug))

    # A source that fails keeps its previous data: a results round's staged tables are only ever
    # replaced by a parse that passed its guards, and a price list's previous snapshot stays current
    # (the price history says when it was fetched). Everything else is published; the summary names
    # what failed and the refresh exits non-zero. A refresh asked for rounds of which not one has ever
    # loaded (a first refresh, offline) publishes nothing rather than a warehouse without results.
    if any(wanted for _, wanted in wanted_by_suite) and not any(
            staged_files(s.staged(s.runs_table), warehouse_dir()) for s in SUITES.values()):
        progress("no results round has been loaded yet: nothing is published")
        return summary
    progress("building and publishing the warehouse ...")
    started = time.perf_counter()
    result = run_job("warehouse_job", instance, resources, debug=settings.debug)
    if result.success:
        summary.published, detail = _warehouse_detail(materialized_metadata(result))
    else:
        detail, _ = run_error(result)
    summary.steps.append(StepOutcome("warehouse", result.success, time.perf_counter() - started, detail))
    # Rounds whose new data failed a structural test are not in the published build: named, and the
    # refresh fails (the rest was published).
    from pipelines.lib.warehouse.store import read_published_info

    for key, why in ((read_published_info() or {}).get("excluded_rounds") or {}).items():
        summary.steps.append(StepOutcome(f"round {RoundKey.parse(key).label}", False, 0.0,
                                         f"new data left out: {why}"))
    # a failing structural SQL test is the warehouse step's detail already; plausibility ones warn here
    summary.steps.extend(_check_outcomes(result, skip=set(warehouse_models.check_keys)))
    published = published_db()
    if published.exists():
        labels = {suite.round_label(r) for suite, wanted in wanted_by_suite for r in wanted}
        summary.coverage += [row for row in round_coverage(published, [s for s, wanted in wanted_by_suite if wanted])
                             if row["round"] in labels]
    if summary.published or _team_targets():  # the team's targets catch up with a build they do not hold yet
        summary.steps.append(_outputs(instance, resources, progress, settings.debug))
    return summary


def _team_targets() -> bool:
    """Whether a team catalog or a BI mirror is configured (they are outputs of the published build)."""
    from pipelines.lib.warehouse.team import bi_mirror, team_catalog

    return team_catalog() is not None or bi_mirror() is not None


def _round_detail(metadata: dict[str, dict], suite: Suite = TRAINING) -> tuple[str, bool]:
    """What happened to a round, from the metadata its assets recorded (a successful round run
    materializes all three), and whether it warns: its scores are provisional (not scored by its own rules), or
    today's rules give it no verdict."""
    from pipelines.defs.metadata import ArchiveFetched, RoundStaged, RulesFetched
    from pipelines.defs.rounds.assets import SUITE_ROUNDS

    assets = SUITE_ROUNDS[suite.name]
    fetched = ArchiveFetched.from_metadata(metadata[assets.results_archive])
    staged = RoundStaged.from_metadata(metadata[assets.round_tables])
    head = (f"{'downloaded' if fetched.changed else 'unchanged upstream'}; "
            f"{'re-parsed' if not staged.skipped else 'not re-parsed'}; ")
    counts = f"systems {staged.systems}, quarantined {staged.quarantined}"
    if assets.rules_archive is None:  # LoadGen judged each run: no rules archive
        return f"{head}results {staged.runs}, {counts}", False
    rules = RulesFetched.from_metadata(metadata[assets.rules_archive])
    return (f"{head}runs {staged.runs}, {counts}; {rules_detail(rules)}",
            rules.provisional or rules.current_rules_missing is not None)


def rules_detail(rules) -> str:
    """How a round's rules were found and trusted, as the refresh's line says it."""
    if rules.ref == "none":
        return f"no rules ({rules.why})"
    text = f"rules {rules.ref} ({rules.folder})"
    if not rules.in_rules_table:
        text += f", {rules.source}: {rules.why}; {rules.trust}"
    if rules.provisional:
        text += "; PROVISIONAL: not the round's own rules"
    if rules.current_rules_missing:
        text += f"; NO SCORE UNDER TODAY'S RULES: {rules.current_rules_missing}"
    return text


def _warehouse_detail(metadata: dict[str, dict]) -> tuple[bool, str]:
    """Whether the build was published, and each public model's row count (a skipped build
    materializes nothing)."""
    published = any(meta.get("published") for meta in metadata.values())
    rows = {name: meta["dagster/row_count"] for name, meta in sorted(metadata.items())
            if "dagster/row_count" in meta and not name.startswith(("raw_", "stg_", "_"))}
    head = "published" if published else "inputs unchanged, not rebuilt"
    return published, head + "; " + ", ".join(f"{table} {count}" for table, count in rows.items())


def _check_outcomes(result: dg.ExecuteInProcessResult, skip: set = frozenset()) -> list[StepOutcome]:
    """The asset checks on the published build: a failed ERROR-severity check fails the refresh (a
    WARN one is shown as a warning, never as a failure); the SQL tests in sql/tests are what gate
    publishing itself."""
    outcomes = []
    for evaluation in result.get_asset_check_evaluations():
        blocking = evaluation.severity == dg.AssetCheckSeverity.ERROR
        if evaluation.passed or (blocking and evaluation.asset_check_key in skip):
            continue
        metadata = {k: v.value for k, v in evaluation.metadata.items()}
        outcomes.append(StepOutcome(f"check {evaluation.check_name}", not blocking, 0.0,
                                    check_detail(blocking, metadata), warning=not blocking))
    return outcomes


def _outputs(instance, resources, progress, debug: bool) -> StepOutcome:
    """What is made from the new build (the outputs group: BI export and report)."""
    progress("refreshing the outputs (team catalog, BI mirror, Parquet export, report) ...")
    started = time.perf_counter()
    result = run_job("outputs_job", instance, resources, debug=debug)
    if result.success:
        metadata = materialized_metadata(result)
        detail = "written: " + ", ".join(sorted(name for name, meta in metadata.items()
                                                 if meta.get("team_mode", True) and meta.get("bi_mirror", True)))
        detail += "".join(_team_detail(metadata))
    else:
        detail, _ = run_error(result)
    return StepOutcome("outputs", result.success, time.perf_counter() - started, detail)


def _team_detail(metadata: dict[str, dict]):
    """What the team catalog and the BI mirror now hold, for the refresh's outputs line."""
    lake = metadata.get("team_warehouse_snapshot") or {}
    if lake.get("team_mode") and "snapshot" in lake:
        done = f"snapshot {lake['snapshot']} published" if lake.get("published") else \
            f"snapshot {lake['snapshot']} holds this build already"
        yield f"; team catalog {lake.get('catalog')}: {done} ({lake.get('replaced', 0)} relations replaced)"
    mirror = metadata.get("bi_postgres_mirror") or {}
    if mirror.get("bi_mirror") and "schema" in mirror:
        done = "swapped in" if mirror.get("mirrored") else "holds this build already"
        yield f"; BI mirror schema {mirror['schema']}: {done} ({mirror.get('tables', 0)} tables)"
