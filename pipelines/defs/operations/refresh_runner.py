"""Run a full refresh in-process with Dagster's own `materialize`, one round partition at a time."""

from __future__ import annotations

import os
import re
import textwrap
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import dagster as dg

from pipelines.lib.io.paths import published_db, warehouse_dir
from pipelines.lib.mlperf.refresh import max_shrink_from_env
from pipelines.lib.mlperf.rounds import results_url_template
from pipelines.lib.mlperf.rules import rules_url_template
from pipelines.lib.warehouse.coverage import render_coverage, round_coverage
from pipelines.lib.warehouse.staging import staged_files

# Dagster's per-step lines and failure tracebacks drown the progress display; failures are
# summarized one line each instead. MLPERF_DEBUG=1 shows Dagster's errors with their tracebacks.
_QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR" if os.environ.get("MLPERF_DEBUG") else "CRITICAL"}}}}


@dataclass
class StepOutcome:
    name: str
    ok: bool
    seconds: float
    detail: str


@dataclass
class RefreshSummary:
    steps: list[StepOutcome] = field(default_factory=list)
    published: bool = False
    coverage: list[dict] = field(default_factory=list)  # per round, from the published warehouse

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    def render(self) -> str:
        """The summary table: one line per step (a failure on one line under 160 characters, other
        details wrapped to 100 columns), what happened to the warehouse, and the fix once at the end."""
        width = max((len(s.name) for s in self.steps), default=10)
        lines = [f"{'step':<{width}}  {'result':<6}  {'secs':>5}  detail"]
        for s in self.steps:
            result = "FAILED" if not s.ok else "warn" if s.detail.startswith(_WARNING) else "ok"
            head = f"{s.name:<{width}}  {result:<6}  {s.seconds:>5.1f}  "
            detail = " ".join(s.detail.split())
            if not s.ok:
                lines.append(_clip(head + detail, _FAILURE_LINE))
            else:
                lines += _wrap(head, detail, _TABLE_WIDTH)
        if self.coverage:
            lines.append("coverage per round:")
            lines += [wrapped for line in render_coverage(self.coverage) for wrapped in _wrap("  ", line, _TABLE_WIDTH)]
        lines.append(f"warehouse: {self._verdict()}")
        lines += self._hints()
        return "\n".join(lines)

    def _verdict(self) -> str:
        target = published_db()
        failed = [s.name for s in self.steps if not s.ok]
        warned = [s.name.removeprefix("check ") for s in self.steps if s.ok and s.detail.startswith(_WARNING)]
        if self.published:
            verdict = "published"
            if failed:
                verdict += f"; previous data kept for: {', '.join(failed)}"
            if warned:
                verdict += f"; warnings: {', '.join(warned)}"
        elif any(s.name == "warehouse" and s.ok for s in self.steps):
            verdict = "unchanged (no input changed)"
        elif target.exists():
            verdict = "NOT published; the previous build stays published"
        else:
            verdict = "NOT published; no warehouse published yet"
        return f"{verdict}\n  {target}"

    def _hints(self) -> list[str]:
        """The fix for sources that could not be reached, named once."""
        unreachable = [s for s in self.steps if not s.ok and any(m in s.detail for m in _UNREACHABLE)]
        hints = []
        if any(s.name.startswith("results") for s in unreachable):
            hints.append("fix: offline or behind a mirror? set --results-url-template or MLPERF_RESULTS_URL_TEMPLATE, "
                         "e.g. file:///data/training_results_{version}.tar.gz")
        if any(s.name.startswith("prices") for s in unreachable):
            hints.append("fix: --no-prices skips the cloud price lists (MLPERF_AZURE_PRICES_URL and the like name mirrors)")
        return hints


_WARNING = "warning: "
_TABLE_WIDTH = 100
_FAILURE_LINE = 159
# Failure texts that mean the source could not be reached at all (a mirror or --no-prices is the fix).
_UNREACHABLE = ("host not found", "connection refused", "timed out", "ConnectionError", "Timeout")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _wrap(head: str, detail: str, width: int) -> list[str]:
    """`head` + `detail`, continued on indented lines so that no line passes `width` columns."""
    room = max(width - len(head), 30)
    parts = textwrap.wrap(detail, room, break_long_words=True) or [""]
    return [head + parts[0]] + [" " * len(head) + part for part in parts[1:]]


_URL = re.compile(r"(?:https?|file)://[^\s'\"()]+")


def _short_url(match: re.Match) -> str:
    """A URL without its query string (it may hold a key) and, when long, without its middle."""
    whole = match.group(0)
    url = whole.rstrip(":,;.")
    trail = whole[len(url):]
    url = url.split("?", 1)[0]
    if len(url) > 72:
        scheme, _, rest = url.partition("://")
        host, _, path = rest.partition("/")
        url = f"{scheme}://{host}/…/{([part for part in path.split('/') if part] or [''])[-1]}"
    return url + trail


def readable_error(message: str, cls_name: str | None = None) -> str:
    """One line a person can act on: no module path or class name in front, URLs shortened."""
    text = " ".join((message or "").split())
    if cls_name:
        text = re.sub(rf"^(?:[A-Za-z_]\w*\.)*{re.escape(cls_name)}: ", "", text)
    text = _URL.sub(_short_url, text)
    return _clip(text, 150) or cls_name or "failed"


def _metadata(result: dg.ExecuteInProcessResult, asset_key: str) -> dict:
    for event in result.get_asset_materialization_events():
        if event.asset_key.to_user_string() == asset_key:
            return {k: v.value for k, v in event.materialization.metadata.items()}
    return {}


def _error(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            err = event.step_failure_data.error
            while err.cause is not None and (err.cls_name or "").startswith("Dagster"):
                err = err.cause  # the user-code error, not Dagster's wrapper
            return readable_error(err.message, err.cls_name)
    return "failed"


def refresh(rounds: list[str], **kwargs) -> RefreshSummary:
    """Fetch and stage `rounds` (and prices), build, check and publish; the outcome is recorded for `status`."""
    from pipelines.lib.io.locking import refresh_lock, remove_stale_files
    from pipelines.lib.warehouse.status import record_refresh_outcome

    with refresh_lock(warehouse_dir()):  # a second refresh of this directory raises WarehouseBusy
        remove_stale_files(warehouse_dir())
        try:
            summary = _refresh(rounds, **kwargs)
        except BaseException as exc:
            record_refresh_outcome(None, False, f"refresh crashed: {type(exc).__name__}: {exc}")
            raise
        record_refresh_outcome(None, summary.ok, summary.render(), steps=[asdict(s) for s in summary.steps],
                               published=summary.published)
        return summary


def _refresh(
    rounds: list[str],
    *,
    url_template: str | None = None,
    rules_template: str | None = None,
    accept_shrink: bool = False,
    prices: bool = True,
    progress: Callable[[str], None] = lambda _: None,
    instance: dg.DagsterInstance | None = None,
    backoff_seconds: float = 1.0,
) -> RefreshSummary:
    # Imported here: the Dagster definitions are only needed once a refresh runs.
    from pipelines.defs.mlperf.assets import ROUND_ASSETS
    from pipelines.defs.mlperf.partitions import mlperf_rounds
    from pipelines.defs.resources import MlperfResultsSource, WarehouseLocation
    from pipelines.defs.warehouse.models import warehouse_models

    instance = instance or dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(
        mlperf_rounds.name, [r for r in rounds if not instance.has_dynamic_partition(mlperf_rounds.name, r)]
    )
    resources = {
        "results_source": MlperfResultsSource(url_template=results_url_template(url_template),
                                              rules_url_template=rules_url_template(rules_template),
                                              max_shrink=max_shrink_from_env(), accept_shrink=accept_shrink,
                                              backoff_seconds=backoff_seconds),
        "warehouse_location": WarehouseLocation(directory=str(warehouse_dir())),
    }
    summary = RefreshSummary()
    for index, round_version in enumerate(rounds, 1):
        progress(f"[{index}/{len(rounds)}] {round_version}: fetching and parsing ...")
        started = time.perf_counter()
        result = dg.materialize(
            ROUND_ASSETS,
            partition_key=round_version, instance=instance, resources=resources, raise_on_error=False, run_config=_QUIET,
        )
        seconds = time.perf_counter() - started
        if result.success:
            fetched = _metadata(result, "mlperf_results_archive")
            staged = _metadata(result, "mlperf_round_tables")
            rules = _metadata(result, "mlperf_rules_archive")
            detail = (
                f"{'downloaded' if fetched.get('changed') else 'unchanged upstream'}; "
                f"{'re-parsed' if not staged.get('skipped') else 'not re-parsed'}; "
                f"runs {staged.get('runs')}, systems {staged.get('systems')}, quarantined {staged.get('quarantined')}; "
                f"rules {rules.get('ref')}" + ("" if rules.get("in_rules_table", True) else " (round not in the rules table)")
            )
        else:
            detail = _error(result)
        summary.steps.append(StepOutcome(f"results {round_version}", result.success, seconds, detail))
        progress(f"[{index}/{len(rounds)}] {round_version}: {'ok' if result.success else 'FAILED'} in {seconds:.1f}s; {detail}")

    if prices:
        from pipelines.defs.operations.refresh_prices import refresh_prices
        from pipelines.defs.prices.resources import price_sources_from_env

        sources = price_sources_from_env(backoff_seconds=backoff_seconds)
        summary.steps.extend(refresh_prices(instance, resources, progress, price_sources=sources))

    # A source that fails keeps its previous data: a results round's staged tables are only ever
    # replaced by a parse that passed its guards, and a price list's previous snapshot stays current
    # (the price history says when it was fetched). Everything else is published; the summary names
    # what failed and the refresh exits non-zero. A refresh asked for rounds of which not one has ever
    # loaded (a first refresh, offline) publishes nothing rather than a warehouse without results.
    if rounds and not staged_files("mlperf_runs", warehouse_dir()):
        progress("no results round has been loaded yet: nothing is published")
        return summary
    progress("building and publishing the warehouse ...")
    started = time.perf_counter()
    result = dg.materialize(
        [warehouse_models, *_checks_on(warehouse_models)],
        instance=instance, resources=resources, raise_on_error=False, run_config=_QUIET,
    )
    rows = _model_rows(result, warehouse_models) if result.success else {}
    summary.published = bool(rows)  # the models are materialized only by a build that was published
    detail = (
        ("published" if summary.published else "inputs unchanged, not rebuilt")
        + "; " + ", ".join(f"{t} {n}" for t, n in sorted(rows.items()) if not t.startswith(("raw_", "stg_", "_")))
    ) if result.success else _error(result)
    summary.steps.append(StepOutcome("warehouse", result.success, time.perf_counter() - started, detail))
    # the SQL tests' own failures are the warehouse step's detail already
    summary.steps.extend(_check_outcomes(result, skip=set(warehouse_models.check_keys)))
    published = published_db()
    if published.exists():
        summary.coverage = [row for row in round_coverage(published) if row["round"] in rounds]
    if summary.published:
        summary.steps.append(_after_publish(instance, resources, progress))
    return summary


def _checks_on(assets_def: dg.AssetsDefinition) -> list[dg.AssetChecksDefinition]:
    """Every Python asset check of the definitions that targets one of `assets_def`'s assets."""
    from pipelines.definitions import defs

    return [check for check in (defs().asset_checks or [])
            if any(key.asset_key in assets_def.keys for key in check.check_keys)]


def _model_rows(result: dg.ExecuteInProcessResult, assets_def: dg.AssetsDefinition) -> dict[str, int]:
    """Rows per model materialized by this run (none when the build was skipped)."""
    rows = {}
    for event in result.get_asset_materialization_events():
        key = event.asset_key
        if key in assets_def.keys:
            rows[key.to_user_string()] = event.materialization.metadata["dagster/row_count"].value
    return rows


def _check_outcomes(result: dg.ExecuteInProcessResult, skip: set = frozenset()) -> list[StepOutcome]:
    """The asset checks on the published build: a failed ERROR-severity check fails the refresh (a
    WARN one is shown as a warning, never as a failure); the SQL tests in sql/tests are what gate
    publishing itself."""
    outcomes = []
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.passed or evaluation.asset_check_key in skip:
            continue
        blocking = evaluation.severity == dg.AssetCheckSeverity.ERROR
        summary = evaluation.metadata.get("summary")  # a check's own line for a person, when it has one
        if summary is not None:
            shown = [str(summary.value)]
        else:
            shown = [_shown(k, v.value) for k, v in evaluation.metadata.items() if v.value not in (0, "", None, {}, [])]
        outcomes.append(StepOutcome(f"check {evaluation.check_name}", not blocking, 0.0,
                                    _clip(f"{'failed: ' if blocking else _WARNING}{'; '.join(shown)}", 500)))
    return outcomes


def _shown(key: str, value) -> str:
    if isinstance(value, dict):
        return f"{key}: " + ", ".join(f"{k} ({v})" for k, v in value.items())
    return f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"


def _after_publish(instance, resources, progress) -> StepOutcome:
    """The BI export and the latest round's report, refreshed from the new build."""
    from pipelines.defs.metrics.assets import mlperf_report
    from pipelines.defs.warehouse.exports import warehouse_parquet_export

    progress("exporting Parquet and rendering the report ...")
    started = time.perf_counter()
    result = dg.materialize(
        [warehouse_parquet_export, mlperf_report], instance=instance, resources=resources,
        raise_on_error=False, run_config=_QUIET,
    )
    detail = "exports/parquet and reports/ written" if result.success else _error(result)
    return StepOutcome("exports + report", result.success, time.perf_counter() - started, detail)
