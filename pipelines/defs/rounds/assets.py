"""Every MLPerf suite's rounds in Dagster, made by one factory from its `Suite` (pipelines/lib/mlperf/suites.py).

For each suite `round_assets(suite)` builds, named by `Suite.domain` (`hpc`) and `Suite.definitions`:

- the dynamic partitions of its rounds (`mlperf_hpc_round`): a round GitHub discovery or the configuration names
  becomes a partition without a code change;
- the assets of one round, in the group `hpc`: `hpc_results_archive` (downloaded with a conditional GET),
  `hpc_rules_archive` when the suite is scored by a rules release (`Suite.has_rules`), and `hpc_round_tables`
  (parsed, scored, validated and staged), which depends on both;
- `hpc_round_job`, the whole group for one round (jobs, sensors and the CLI's refresh run it);
- `weekly_hpc_results`, the schedule that re-runs that job for every known round.

SUITE_ROUNDS holds them by suite name: the sensors and the CLI's runner read it. Every round asset is also an
attribute of this module by its name (`from pipelines.defs.rounds.assets import hpc_round_tables`).
"""

import time
from dataclasses import dataclass

import dagster as dg

from pipelines.defs.metadata import ArchiveFetched, RoundStaged, RulesFetched
from pipelines.defs.resources import MlperfResultsSource, WarehouseLocation
from pipelines.defs.rounds.migration import migrate_training_names
from pipelines.lib.io.sidecars import FetchResult
from pipelines.lib.mlperf.rounds import archive_url
from pipelines.lib.mlperf.rules import rules_url
from pipelines.lib.mlperf.stage import fetch_round, fetch_rules, stage_round
from pipelines.lib.mlperf.suites import SUITES, Suite


@dataclass(frozen=True)
class SuiteRounds:
    """A suite's rounds in the definitions: their partitions, the assets one round materializes (in order), the job
    that runs them for a round and the weekly schedule of that job; and the names of the assets (the results archive,
    the staged round tables, the rules archive if any)."""

    partitions: dg.DynamicPartitionsDefinition
    assets: list[dg.AssetsDefinition]
    job: object  # what dg.define_asset_job returns (its class is not public Dagster API)
    schedule: dg.ScheduleDefinition
    results_archive: str
    round_tables: str
    rules_archive: str | None


def round_assets(suite: Suite) -> SuiteRounds:
    """The Dagster pieces of one suite's rounds (module docstring), named and described by the suite."""
    named, group = suite.definitions, suite.domain
    partitions = dg.DynamicPartitionsDefinition(name=named.partitions)

    @dg.asset(name=f"{group}_results_archive", partitions_def=partitions, group_name=group, kinds={"python", "file"},
              description=named.results_archive)
    def results_archive(context: dg.AssetExecutionContext, results_source: MlperfResultsSource,
                        warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
        return fetch_results_archive(context, suite, results_source, warehouse_location)

    rules = None
    if suite.has_rules:  # scored by the rule files of an mlcommons/logging release: fetch the round's
        if named.rules_archive is None:
            raise ValueError(f"{suite.name}: a suite with rules describes its rules archive (definitions.rules_archive)")

        @dg.asset(name=f"{group}_rules_archive", partitions_def=partitions, group_name=group,
                  kinds={"python", "file"}, description=named.rules_archive)
        def rules(context: dg.AssetExecutionContext, results_source: MlperfResultsSource,
                  warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
            return fetch_rules_archive(context, suite, results_source, warehouse_location)

    archives = [asset for asset in (results_archive, rules) if asset is not None]

    @dg.asset(name=f"{group}_round_tables", partitions_def=partitions, deps=archives, group_name=group,
              kinds={"python", "polars", "parquet"}, description=named.round_tables)
    def round_tables(context: dg.AssetExecutionContext, results_source: MlperfResultsSource,
                     warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
        return stage_round_tables(context, suite, results_source, warehouse_location)

    # Partitioned and unpartitioned assets cannot share a run: one job per partitioning. Its partitions are its
    # assets' (Dagster infers them); it selects the group, so an asset or check added to the group runs with it.
    job = dg.define_asset_job(f"{group}_round_job", selection=dg.AssetSelection.groups(group), description=named.job)
    return SuiteRounds(partitions, [*archives, round_tables], job, weekly_schedule(suite, partitions, job),
                       _name(results_archive), _name(round_tables), _name(rules) if rules is not None else None)


def weekly_schedule(suite: Suite, partitions: dg.DynamicPartitionsDefinition, job) -> dg.ScheduleDefinition:
    """Every week, re-check each known round of the suite upstream: an unchanged archive is neither downloaded
    (ETag) nor parsed again; the publish_after_refresh sensor then rebuilds if anything changed."""

    @dg.schedule(name=f"weekly_{suite.domain}_results", cron_schedule=suite.definitions.weekly_cron, job=job,
                 execution_timezone="UTC", description=suite.definitions.weekly)
    def weekly(context: dg.ScheduleEvaluationContext):
        rounds = context.instance.get_dynamic_partitions(partitions.name)
        if not rounds:
            return dg.SkipReason(suite.definitions.no_partitions)
        stamp = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
        return [dg.RunRequest(run_key=f"weekly-{stamp}-{r}", partition_key=r) for r in rounds]

    return weekly


# The bodies of every suite's round assets: one way to fetch and stage.

def fetch_results_archive(context: dg.AssetExecutionContext, suite: Suite, results_source: MlperfResultsSource,
                          warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    round_version = context.partition_key
    migrated = migrate_training_names(context.instance, warehouse_location.path())  # a round job the UI launches migrates too
    if migrated:
        context.log.info(migrated)
    template = results_source.template_for(suite)
    started = time.perf_counter()
    fetched = fetch_round(round_version, template, warehouse_location.path(), results_source.policy(suite), suite)
    context.log.info(f"{suite.name} {round_version}: {'downloaded' if fetched.changed else 'unchanged upstream'} "
                     f"({fetched.size} bytes)")
    return _fetched(fetched, archive_url(template, round_version),
                    etag=fetched.etag or "", fetch_seconds=round(time.perf_counter() - started, 2))


def fetch_rules_archive(context: dg.AssetExecutionContext, suite: Suite, results_source: MlperfResultsSource,
                        warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    round_version = context.partition_key
    rules = fetch_rules(round_version, results_source.rules_url_template, warehouse_location.path(),
                        results_source.policy(), default_ref=results_source.rules_default_ref, suite=suite,
                        github=results_source.github(), trusted_refs=frozenset(results_source.trusted_rules_refs))
    if rules is None:
        context.log.info(f"{round_version}: no rules release exists; runs must start, stop and succeed")
        return dg.MaterializeResult(metadata=RulesFetched("none", why="v0.5 predates the rules releases").as_metadata())
    ref = rules.ref
    for note in rules.notes:
        context.log.warning(note)
    (context.log.warning if ref.provisional else context.log.info)(
        f"{suite.round_label(round_version)}: rules {ref.ref} ({ref.source}; {rules.folder}; {rules.trust}): {ref.why}")
    if rules.current_missing:
        context.log.warning(f"{suite.round_label(round_version)}: {rules.current_missing}")
    return _fetched(rules.fetched, rules_url(results_source.rules_url_template, ref.ref),
                    **RulesFetched(ref.ref, ref.listed, ref.ref_date or None, ref.why, ref.source, rules.folder,
                                   ref.provisional, rules.trust, "; ".join(rules.notes) or None,
                                   rules.current_missing).as_metadata())


def stage_round_tables(context: dg.AssetExecutionContext, suite: Suite, results_source: MlperfResultsSource,
                       warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    staged = stage_round(context.partition_key, warehouse_location.path(),
                         max_shrink=results_source.max_shrink, accept_shrink=results_source.accept_shrink,
                         trusted_rules_refs=frozenset(results_source.trusted_rules_refs), suite=suite)
    context.log.info(
        f"{suite.name} {context.partition_key}: {'unchanged, not re-parsed' if staged.skipped else 'parsed'}; "
        f"rows {staged.row_counts}, quarantined {staged.quarantine_count}"
    )
    return dg.MaterializeResult(
        metadata=RoundStaged(
            skipped=staged.skipped, runs=staged.row_counts[suite.staged(suite.runs_table)],
            systems=staged.row_counts[suite.staged("systems")],
            scaling_files=staged.row_counts[suite.staged(suite.scaling_table)] if suite.scaling_table else 0,
            quarantined=staged.quarantine_count, parse_seconds=round(staged.seconds, 2)).as_metadata(),
        data_version=dg.DataVersion(staged.archive_sha256),
    )


def _fetched(fetched: FetchResult, url: str, **metadata) -> dg.MaterializeResult:
    """A downloaded archive as an asset materialization: its URL, whether it changed, its digest."""
    return dg.MaterializeResult(
        metadata=ArchiveFetched(url, fetched.changed, fetched.sha256, fetched.size).as_metadata() | metadata,
        data_version=dg.DataVersion(fetched.sha256),
    )


def _name(asset: dg.AssetsDefinition) -> str:
    return asset.key.to_user_string()


# The one map from a suite (pipelines.lib.mlperf.suites) to its Dagster pieces: the CLI's refresh and the sensors
# read it. Built for every suite of SUITES, in their order.
SUITE_ROUNDS = {name: round_assets(suite) for name, suite in SUITES.items()}
ROUND_JOBS = [rounds.job for rounds in SUITE_ROUNDS.values()]
_ASSETS = {_name(asset): asset for rounds in SUITE_ROUNDS.values() for asset in rounds.assets}


def __getattr__(name: str) -> dg.AssetsDefinition:
    """A round asset by its name, as other definitions import it (`from ... import hpc_round_tables`)."""
    try:
        return _ASSETS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


@dg.definitions
def round_definitions() -> dg.Definitions:
    return dg.Definitions(assets=list(_ASSETS.values()), jobs=ROUND_JOBS,
                          schedules=[rounds.schedule for rounds in SUITE_ROUNDS.values()])
