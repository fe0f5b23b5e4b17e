import time

import dagster as dg

from pipelines.defs.metadata import ArchiveFetched, RoundStaged, RulesFetched
from pipelines.defs.mlperf.partitions import mlperf_rounds
from pipelines.defs.resources import MlperfResultsSource, WarehouseLocation
from pipelines.lib.io.http import FetchResult
from pipelines.lib.mlperf.rounds import archive_url
from pipelines.lib.mlperf.rules import rules_url
from pipelines.lib.mlperf.stage import fetch_round, fetch_rules, stage_round
from pipelines.lib.mlperf.suites import TRAINING, Suite


@dg.asset(
    partitions_def=mlperf_rounds,
    group_name="mlperf",
    kinds={"python", "file"},
    description="The round's MLPerf Training results archive, downloaded with a conditional GET.",
)
def mlperf_results_archive(
    context: dg.AssetExecutionContext, results_source: MlperfResultsSource, warehouse_location: WarehouseLocation
) -> dg.MaterializeResult:
    return fetch_results_archive(context, TRAINING, results_source, warehouse_location)


@dg.asset(
    partitions_def=mlperf_rounds,
    group_name="mlperf",
    kinds={"python", "file"},
    description=(
        "The mlcommons/logging archive at the git ref the round was scored with (pipelines/lib/mlperf/"
        "rules_refs.csv): its rule files and checker code decide the score as published."
    ),
)
def mlperf_rules_archive(
    context: dg.AssetExecutionContext, results_source: MlperfResultsSource, warehouse_location: WarehouseLocation
) -> dg.MaterializeResult:
    return fetch_rules_archive(context, TRAINING, results_source, warehouse_location)


@dg.asset(
    partitions_def=mlperf_rounds,
    deps=[mlperf_results_archive, mlperf_rules_archive],
    group_name="mlperf",
    kinds={"python", "polars", "parquet"},
    description=(
        "Runs, systems and scaling factors parsed from the archive, each run judged by the round's own rules "
        "(as published) and today's; validated, failures quarantined."
    ),
)
def mlperf_round_tables(
    context: dg.AssetExecutionContext, results_source: MlperfResultsSource, warehouse_location: WarehouseLocation
) -> dg.MaterializeResult:
    return stage_round_tables(context, TRAINING, results_source, warehouse_location)


# Everything one round partition materializes, in order: jobs, sensors and the CLI select these.
ROUND_ASSETS = [mlperf_results_archive, mlperf_rules_archive, mlperf_round_tables]


# The bodies of a suite's three round assets (Training's here, HPC's in defs/hpc): one way to fetch and stage.

def fetch_results_archive(context: dg.AssetExecutionContext, suite: Suite, results_source: MlperfResultsSource,
                          warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    round_version = context.partition_key
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
    return _fetched(rules.fetched, rules_url(results_source.rules_url_template, ref.ref),
                    **RulesFetched(ref.ref, ref.listed, ref.ref_date or None, ref.why, ref.source, rules.folder,
                                   ref.provisional, rules.trust, "; ".join(rules.notes) or None).as_metadata())


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
