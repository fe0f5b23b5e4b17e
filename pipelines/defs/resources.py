import dagster as dg

from pipelines.lib.mlperf.rounds import (
    DEFAULT_RESULTS_URL_TEMPLATE,
    results_url_template,
)
from pipelines.lib.mlperf.rules import DEFAULT_RULES_URL_TEMPLATE, rules_url_template
from pipelines.lib.mlperf.stage import DEFAULT_MAX_SHRINK, max_shrink_from_env


class Downloads(dg.ConfigurableResource):
    """Retries and download limits of a resource that fetches; an unset limit means its environment
    variable or default (README, "Limits and safety")."""

    max_attempts: int = 5
    backoff_seconds: float = 1.0
    min_rate_bytes_per_second: int | None = None
    min_rate_seconds: float | None = None
    deadline_seconds: float | None = None

    def retry_policy(self, **more):
        from pipelines.lib.io.http import RetryPolicy

        return RetryPolicy(max_attempts=self.max_attempts, backoff_seconds=self.backoff_seconds,
                           min_rate_bytes=self.min_rate_bytes_per_second, min_rate_seconds=self.min_rate_seconds,
                           deadline_seconds=self.deadline_seconds, **more)


class MlperfResultsSource(Downloads):
    """Where round archives come from: a URL template with `{version}` (http(s), file:// or a path),
    and the `mlcommons/logging` archive of the rules each round was scored with (`{ref}`)."""

    url_template: str = DEFAULT_RESULTS_URL_TEMPLATE
    rules_url_template: str = DEFAULT_RULES_URL_TEMPLATE
    # A round whose results that count shrink by more than this share is refused (previous data kept).
    max_shrink: float = DEFAULT_MAX_SHRINK
    accept_shrink: bool = False
    max_archive_bytes: int | None = None
    # refs of mlcommons/logging used although their content is not the digest rules_refs.csv pins
    trusted_rules_refs: list[str] = []

    def policy(self):
        from pipelines.lib.io.limits import limit

        return self.retry_policy(max_bytes=self.max_archive_bytes or limit("max_archive_bytes"))


class WarehouseLocation(dg.ConfigurableResource):
    """The warehouse directory; empty means `MLPERF_WAREHOUSE_DIR` or `warehouse/`."""

    directory: str = ""

    def path(self):
        from pathlib import Path

        from pipelines.lib.io.paths import warehouse_dir

        return Path(self.directory).resolve() if self.directory else warehouse_dir()


def results_source_from_env(*, url_template: str | None = None, rules_template: str | None = None,
                            accept_shrink: bool | None = None, trusted_rules_refs: list[str] | None = None,
                            **overrides) -> MlperfResultsSource:
    """MlperfResultsSource from MLPERF_RESULTS_URL_TEMPLATE, MLPERF_RULES_URL_TEMPLATE, MLPERF_MAX_SHRINK,
    MLPERF_ACCEPT_SHRINK and MLPERF_TRUST_RULES_REFS (comma-separated refs); the CLI's flags add to or win
    over them."""
    if accept_shrink is None:
        accept_shrink = dg.EnvVar("MLPERF_ACCEPT_SHRINK").get_value("").strip().lower() in ("1", "true", "yes")
    from_env = [r.strip() for r in dg.EnvVar("MLPERF_TRUST_RULES_REFS").get_value("").split(",") if r.strip()]
    overrides["trusted_rules_refs"] = sorted(set(from_env) | set(trusted_rules_refs or ()))
    return MlperfResultsSource(url_template=results_url_template(url_template),
                               rules_url_template=rules_url_template(rules_template),
                               max_shrink=max_shrink_from_env(), accept_shrink=accept_shrink, **overrides)


def warehouse_location_from_env() -> WarehouseLocation:
    return WarehouseLocation(directory=dg.EnvVar("MLPERF_WAREHOUSE_DIR").get_value("") or "")


def locked(build, description: str) -> dg.ResourceDefinition:
    """A resource run config cannot change: built from the environment (the operator's settings) when a run
    starts, with an empty config schema, so a run launched from the UI with other source URLs, another
    warehouse folder or other limits is refused before it starts. Secrets are `dg.EnvVar`s resolved then."""
    return dg.ResourceDefinition(resource_fn=lambda _context: build().process_config_and_initialize(),
                                 config_schema={}, description=description)


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={
        "results_source": locked(results_source_from_env, "Where round archives and rules archives come from "
                                 "(MLPERF_RESULTS_URL_TEMPLATE, MLPERF_RULES_URL_TEMPLATE), with download limits."),
        "warehouse_location": locked(warehouse_location_from_env, "The warehouse directory (MLPERF_WAREHOUSE_DIR)."),
    })
