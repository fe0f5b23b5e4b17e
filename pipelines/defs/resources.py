import dagster as dg

from pipelines.lib.mlperf.rounds import results_url_template
from pipelines.lib.mlperf.rules import rules_url_template
from pipelines.lib.mlperf.stage import DEFAULT_MAX_SHRINK
from pipelines.lib.mlperf.suites import SUITES
from pipelines.lib.reference.sources import DEFAULT_GITHUB_API_URL, DEFAULT_RULES_URL_TEMPLATE
from pipelines.lib.warehouse.parameters import DEFAULT_PUE
from pipelines.settings import Settings, apply, load_settings


class Downloads(dg.ConfigurableResource):
    """Retries and download limits of a resource that fetches; an unset limit means the limit in force
    (the settings, docs: "Settings and limits")."""

    max_attempts: int = 5
    backoff_seconds: float = 1.0
    min_rate_bytes_per_second: int | None = None
    min_rate_seconds: float | None = None
    deadline_seconds: float | None = None

    def retry_policy(self, **more):
        from pipelines.lib.io.retry import RetryPolicy

        return RetryPolicy(max_attempts=self.max_attempts, backoff_seconds=self.backoff_seconds,
                           min_rate_bytes=self.min_rate_bytes_per_second, min_rate_seconds=self.min_rate_seconds,
                           deadline_seconds=self.deadline_seconds, **more)


class MlperfResultsSource(Downloads):
    """Where round archives come from: a URL template with `{version}` (http(s), file:// or a path) per
    suite (by suite name), and the `mlcommons/logging` archive of the rules each round was scored with (`{ref}`)."""

    url_templates: dict[str, str] = {name: suite.default_results_url_template for name, suite in SUITES.items()}
    rules_url_template: str = DEFAULT_RULES_URL_TEMPLATE
    # A round whose results that count shrink by more than this share is refused (previous data kept).
    max_shrink: float = DEFAULT_MAX_SHRINK
    accept_shrink: bool = False
    max_archive_bytes: int | None = None
    # refs of mlcommons/logging used although their content is not the digest rules_refs.csv pins
    trusted_rules_refs: list[str] = []
    # the rules ref of a round rules_refs.csv does not list (None: discovered among mlcommons/logging's tags)
    rules_default_ref: str | None = None
    # GitHub's REST API, where the tags and default branch of mlcommons/logging are listed
    github_api_url: str = DEFAULT_GITHUB_API_URL

    def github(self):
        """Where rules releases are discovered; the token (a secret) is read from the settings when needed, never
        kept in the resource's configuration."""
        from pipelines.lib.mlperf.rules_releases import GitHubSource

        token = load_settings().secrets.github_token
        return GitHubSource(self.github_api_url, token.get_secret_value() if token is not None else None)

    def template_for(self, suite) -> str:
        """The results URL template of a suite (`pipelines.lib.mlperf.suites`)."""
        return self.url_templates[suite.name]

    def policy(self, suite=None):
        """Retries and limits of a download; a suite's results archive has its own size limit
        (`Suite.archive_limit`: Inference's archives are gigabytes)."""
        from pipelines.lib.io.limits import limit

        name = suite.archive_limit if suite is not None else "max_archive_bytes"
        return self.retry_policy(max_bytes=self.max_archive_bytes or limit(name))


class BuildAssumptions(dg.ConfigurableResource):
    """What a build assumes that no source states (lib/warehouse/parameters.py): the electricity price and the
    PUE of energy costs."""

    electricity_usd_per_kwh: float | None = None
    pue: float = DEFAULT_PUE

    def parameters(self):
        from pipelines.lib.warehouse.parameters import BuildParameters

        return BuildParameters(self.electricity_usd_per_kwh, self.pue)


def build_assumptions_from_settings(settings: Settings | None = None) -> BuildAssumptions:
    settings = settings or load_settings()
    return BuildAssumptions(electricity_usd_per_kwh=settings.build.electricity_usd_per_kwh, pue=settings.build.pue)


class WarehouseLocation(dg.ConfigurableResource):
    """The warehouse directory; empty means the configured one (`warehouse_dir` setting) or `warehouse/`."""

    directory: str = ""

    def path(self):
        from pathlib import Path

        from pipelines.lib.io.paths import warehouse_dir

        return Path(self.directory).resolve() if self.directory else warehouse_dir()


def results_source_from_settings(settings: Settings | None = None, *,
                                 backoff_seconds: float = 1.0) -> MlperfResultsSource:
    """MlperfResultsSource from the settings (default: loaded now; the CLI's carry its flags); `backoff_seconds`
    is the first retry's wait (tests shorten it)."""
    settings = settings or load_settings()
    sources = settings.sources
    return MlperfResultsSource(
        url_templates={name: results_url_template(sources.suite(name).results_url_template) for name in SUITES},
        rules_url_template=rules_url_template(sources.rules_url_template),
        max_shrink=settings.limits.max_shrink, accept_shrink=sources.accept_shrink,
        trusted_rules_refs=sorted(set(sources.trust_rules_refs)), rules_default_ref=sources.rules_default_ref,
        github_api_url=sources.github_api_url, backoff_seconds=backoff_seconds)


def warehouse_location_from_settings(settings: Settings | None = None) -> WarehouseLocation:
    return WarehouseLocation(directory=str((settings or load_settings()).paths.warehouse_dir.resolve()))


def locked(build, description: str) -> dg.ResourceDefinition:
    """A resource run config cannot change: built from the operator's settings (read, and applied to this
    process, when a run starts), with an empty config schema, so a run launched from the UI with other source
    URLs, another warehouse folder or other limits is refused before it starts. Secrets are `dg.EnvVar`s
    resolved then."""
    return dg.ResourceDefinition(
        resource_fn=lambda _context: build(apply(load_settings())).process_config_and_initialize(),
        config_schema={}, description=description)


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={
        "results_source": locked(results_source_from_settings, "Where round archives and rules archives come from "
                                 f"({', '.join(suite.results_variable for suite in SUITES.values())}, "
                                 "MLPERF_RULES_URL_TEMPLATE), with download limits."),
        "build_assumptions": locked(build_assumptions_from_settings, "What builds assume that no source states: "
                                    "the electricity price and PUE of energy costs (MLPERF_ELECTRICITY_USD_PER_KWH, "
                                    "MLPERF_PUE)."),
        "warehouse_location": locked(warehouse_location_from_settings, "The warehouse directory (MLPERF_WAREHOUSE_DIR)."),
    })
