"""Sensors: discover new MLPerf rounds on GitHub, rebuild the warehouse after round runs, and
flag a stale warehouse. None of them opens the warehouse. The round sensors serve every suite of SUITES
(pipelines/lib/mlperf/suites.py) through SUITE_ROUNDS; their descriptions name each suite's pieces."""

import json
import time

import dagster as dg

from pipelines.defs.operations.jobs import outputs_job, prices_job, site_job, warehouse_job
from pipelines.defs.rounds.assets import ROUND_JOBS, SUITE_ROUNDS
from pipelines.lib.io.limits import variable
from pipelines.lib.mlperf.suites import SUITES


def _add_and_fetch(rounds_by_suite: dict[str, list[str]], why: str, cursor: str | None = None) -> dg.SensorResult:
    """Add each suite's `rounds` as partitions and request a fetch-and-stage run for each."""
    requests, partitions = [], []
    for suite, rounds in rounds_by_suite.items():
        if not rounds:
            continue
        pieces = SUITE_ROUNDS[suite]
        requests += [dg.RunRequest(run_key=f"{why}-{suite}-{r}", partition_key=r, job_name=pieces.job.name)
                     for r in rounds]
        partitions.append(pieces.partitions.build_add_request(rounds))
    return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=partitions, cursor=cursor)


def _new_rounds(context, rounds_by_suite: dict[str, list[str]]) -> dict[str, list[str]]:
    """Of each suite's rounds, those that are not partitions yet."""
    new = {}
    for suite, rounds in rounds_by_suite.items():
        known = set(context.instance.get_dynamic_partitions(SUITE_ROUNDS[suite].partitions.name))
        new[suite] = [r for r in rounds if r not in known]
    return new


def _first_then_others(names: list[str]) -> str:
    """The first suite's name of a thing, the others' in parentheses: `training_round (mlperf_hpc_round, ...)`."""
    first, *others = names
    return f"{first} ({', '.join(others)})" if others else first


def _configured_rounds() -> str:
    """Each suite's rounds setting with its default rounds: `MLPERF_ROUNDS (default v0.5 … v6.0), ... and ...`."""
    listed = []
    for suite in SUITES.values():
        default = suite.default_rounds
        listed.append(f"{variable(suite.rounds_setting)} ({'' if listed else 'default '}{default[0]} … {default[-1]})")
    return f"{', '.join(listed[:-1])} and {listed[-1]}" if len(listed) > 1 else listed[0]


@dg.sensor(
    jobs=ROUND_JOBS,
    minimum_interval_seconds=3600,
    description="Lists the mlcommons GitHub repositories (MLPERF_GITHUB_API_URL, optional MLPERF_GITHUB_TOKEN); "
    f"a new {_first_then_others([f'{suite.repository}_vX.Y' for suite in SUITES.values()])} repository of a suite "
    f"in MLPERF_SUITES becomes an {_first_then_others([suite.definitions.partitions for suite in SUITES.values()])} "
    "partition and is fetched and staged.",
)
def mlperf_round_discovery(context: dg.SensorEvaluationContext):
    from pipelines.lib.io.retry import FetchError
    from pipelines.lib.mlperf.discovery import discover_rounds
    from pipelines.settings import apply, load_settings

    settings = apply(load_settings())
    cursor = json.loads(context.cursor or "{}")
    if cursor.get("skip_until", 0) > time.time():
        return dg.SkipReason(f"GitHub rate limit: waiting until epoch {cursor['skip_until']:.0f}")
    try:
        token = settings.secrets.github_token
        found = discover_rounds(cursor.get("etag"), api_url=settings.sources.github_api_url,
                                token=token.get_secret_value() if token else None)
    except FetchError as exc:  # GitHub down: try again next interval, keep the cursor
        return dg.SkipReason(f"GitHub API unavailable: {exc}")
    if found.skip_until is not None:
        return dg.SensorResult(skip_reason=found.message, cursor=json.dumps(cursor | {"skip_until": found.skip_until}))
    if found.not_modified:
        return dg.SkipReason(found.message)
    new = _new_rounds(context, {s: r for s, r in found.rounds_by_suite.items() if s in settings.sources.suites})
    next_cursor = json.dumps({"etag": found.etag})
    if not any(new.values()):
        return dg.SensorResult(skip_reason=f"no new rounds ({found.message})", cursor=next_cursor)
    return _add_and_fetch(new, "discovered", cursor=next_cursor)


@dg.sensor(
    jobs=ROUND_JOBS,
    minimum_interval_seconds=300,
    description=f"Rounds listed in {_configured_rounds()}, of the suites in MLPERF_SUITES, that are not partitions "
    "yet become partitions and are fetched: adding a round is configuration, with or without GitHub discovery.",
)
def configured_rounds(context: dg.SensorEvaluationContext):
    from pipelines.settings import load_settings

    new = _new_rounds(context, {suite.name: rounds for suite, rounds in load_settings().sources.loaded()})
    if not any(new.values()):
        return dg.SkipReason("every configured round is a partition already")
    return _add_and_fetch(new, "configured")


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[*ROUND_JOBS, prices_job],
    request_job=warehouse_job,
    description="After a round or daily price run succeeds, build and publish the warehouse (the build "
    "itself is skipped when no staged file changed).",
)
def publish_after_refresh(context: dg.RunStatusSensorContext):
    waiting = context.instance.get_run_records(dg.RunsFilter(
        job_name=warehouse_job.name, statuses=[dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED]))
    if waiting:  # a build not yet started will pick up these files too
        return dg.SkipReason("a warehouse build is already queued")
    return dg.RunRequest()


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[warehouse_job],
    request_job=outputs_job,
    description="After a warehouse build succeeds, refresh what is made from the published file: the Parquet "
    "export and the report.",
)
def outputs_after_publish(context: dg.RunStatusSensorContext):
    return dg.RunRequest()


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    # after the outputs, not beside them: in team mode they publish the snapshot the site reads
    monitored_jobs=[outputs_job],
    request_job=site_job,
    description="After the outputs of a warehouse build are refreshed (the team catalog's snapshot among them), "
    "rebuild the static results site.",
)
def site_after_publish(context: dg.RunStatusSensorContext):
    return dg.RunRequest()
