"""The operator's settings: one typed object, read from the environment once per process.

Every setting is an `MLPERF_<NAME>` environment variable (any letter case; empty means unset), else its
default. Each has one place in the settings object, by group: `settings.paths.warehouse_dir`,
`settings.sources.suite(HPC).rounds`, `settings.limits.max_shrink` (SETTINGS says where: `path_of`).
`load_settings()` reads them (the environment only: no `.env` file), the CLI's flags override single
settings (`load_settings(warehouse_dir=...)`, `settings.replaced(rounds=...)`), and `apply()` hands what the
plain-function layer needs to it: the warehouse folder, the limits, the hosts whose links may be followed and
the secrets to redact. `pipelines/lib` never reads the environment; Dagster's resources are built from these
settings when a run starts (`pipelines/defs/resources.py`), the CLI builds the same resources from the settings
it loaded. The docs' settings page is generated from this module (`settings_reference`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from pipelines import settings_readers as read
from pipelines.lib.io import limits
from pipelines.lib.io.paths import DEFAULT_WAREHOUSE_DIR, extensions_dir
from pipelines.lib.reference.sources import (
    DEFAULT_AWS_URL,
    DEFAULT_AZURE_URL,
    DEFAULT_CATALOG_URL,
    DEFAULT_GCP_URL,
    DEFAULT_GITHUB_API_URL,
    DEFAULT_OCI_URL,
    DEFAULT_RULES_URL_TEMPLATE,
)
from pipelines.lib.warehouse.parameters import DEFAULT_PUE, PUE_SOURCE, BuildParameters
from pipelines.settings_readers import Secret

_team = read.team


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: its default, what it sets (the docs' settings page), how a value given for it is read (never
    None: an empty variable or a flag not given leaves the default, which may be None), and where it is:
    `settings.<group>.<name>` (a group in GROUPS; "" for `settings.<name>`), or for a suite's source
    `settings.sources.suite(<suite>).<field>`."""

    default: object
    description: str
    read: Callable[[object], object]
    group: str
    suite: str | None = None
    field: str | None = None  # its name within its suite's sources


# The groups of settings, each a frozen object of the settings: `settings.sources.rules_url_template`.
GROUPS = ("paths", "sources", "prices", "build", "team", "secrets", "limits")


def _suite_settings() -> dict[str, Setting]:
    """Each suite's rounds and results archive settings, from the suite table: `rounds`, `results_url_template`,
    `hpc_rounds`, ..."""
    from pipelines.lib.mlperf.suites import SUITES

    out = {}
    for suite in SUITES.values():
        what = "results" if suite.takes_unlisted_rounds else f"{suite.label} results"
        out[suite.rounds_setting] = Setting(list(suite.default_rounds), suite.rounds_description, read.rounds, "sources",
                                            suite.name, "rounds")
        out[suite.results_setting] = Setting(suite.default_results_url_template, suite.results_description,
                                             read.url_template("{version}", what), "sources", suite.name,
                                             "results_url_template")
    return out


def _default_suites() -> list[str]:
    from pipelines.lib.mlperf.suites import SUITES

    return [suite.name for suite in SUITES.values() if suite.loaded_by_default]


SETTINGS: dict[str, Setting] = {
    "warehouse_dir": Setting(DEFAULT_WAREHOUSE_DIR, "where the warehouse lives (every command's --warehouse-dir); "
                             "relative to the current directory", read.path, "paths"),
    **_suite_settings(),
    "suites": Setting(_default_suites(), "the MLPerf suites a refresh loads (comma-separated: training, hpc, "
                      "inference; the refresh's --suites). Inference is opt-in: its upstream archives hold every "
                      "detail log, gigabytes per round", read.suites, "sources"),
    "rules_url_template": Setting(DEFAULT_RULES_URL_TEMPLATE, "where the mlcommons/logging archive of a rules ref "
                                  "is fetched ({ref})", read.url_template("{ref}", "rules"), "sources"),
    "rules_default_ref": Setting(None, "the rules ref of every round rules_refs.csv does not list (default: "
                                 "discovered: the round's newest release tag that ships its rules, else "
                                 "mlcommons/logging's default branch)", read.text, "sources"),
    "trust_rules_refs": Setting([], "rules refs used although their content is not the digest they are pinned to "
                                "(rules_refs.csv, or the warehouse's record on first use: they are re-pinned); "
                                "comma-separated; refresh --trust-rules-ref", read.comma_list, "sources"),
    "accept_shrink": Setting(False, "publish a round whose counted results shrank by more than max_shrink "
                             "(refresh --accept-shrink)", read.flag, "sources"),
    "azure_prices_url": Setting(DEFAULT_AZURE_URL, "base URL of the Azure Retail Prices API", read.url, "prices"),
    "aws_pricing_url": Setting(DEFAULT_AWS_URL, "base URL of the AWS Price List Bulk API", read.url, "prices"),
    "gcp_billing_url": Setting(DEFAULT_GCP_URL, "base URL of the Google Cloud Billing Catalog API", read.url, "prices"),
    "gcp_api_key": Setting(None, "API key of the Cloud Billing Catalog API (secret: sent in a header, redacted "
                           "everywhere); unset: the GCP API is skipped", read.secret, "secrets"),
    "oci_prices_url": Setting(DEFAULT_OCI_URL, "base URL of Oracle Cloud's price list API", read.url, "prices"),
    "price_catalog_url": Setting(DEFAULT_CATALOG_URL, "base URL of SkyPilot's catalog: raw.githubusercontent.com, "
                                 "another HTTP mirror, file:// or a folder", read.url, "prices"),
    "price_catalog_listing_url": Setting(None, "GitHub's REST API (or a mirror of it) where the catalog repository's "
                                         "tree lists its versions and clouds (unset: github_api_url when "
                                         "price_catalog_url is on raw.githubusercontent.com; a folder is listed "
                                         "itself; another mirror is probed)", read.url, "prices"),
    "github_api_url": Setting(DEFAULT_GITHUB_API_URL, "GitHub's REST API (or a mirror): round discovery, and the "
                              "tags and default branch of mlcommons/logging for the rules of new rounds, the SkyPilot "
                              "catalog's tree", read.url, "sources"),
    "github_token": Setting(None, "GitHub token for round, rules and catalog discovery (secret; optional, raises the rate "
                            "limit)", read.secret, "secrets"),
    "allowed_hosts": Setting([], "hosts, besides each configured URL's own, whose links (AWS currentVersionUrl, "
                             "Azure NextPageLink, GitHub next) are followed", read.comma_list, "sources"),
    "electricity_usd_per_kwh": Setting(None, "electricity price for energy costs, USD per kWh (unset: energy "
                                       "costs are not computed)", read.number(above=0, high=10), "build"),
    "pue": Setting(DEFAULT_PUE, f"power usage effectiveness applied to measured energy ({PUE_SOURCE})",
                   read.number(low=1, high=5), "build"),
    "debug": Setting(False, "show Dagster's errors with their tracebacks", read.flag, ""),
    # Team mode (docs: Operating a team warehouse): a DuckLake catalog, its data path, a PostgreSQL mirror for BI
    "catalog": Setting(None, "the team warehouse: the PostgreSQL database of its DuckLake catalog "
                       "(postgresql://user:password@host:5432/dbname; secret). Set, a refresh publishes into the "
                       "DuckLake (one snapshot per refresh) and every command reads it; unset, the local file",
                       read.postgres_url, "secrets"),
    "catalog_data_path": Setting(None, "where the DuckLake's Parquet files go: a folder every machine mounts at the "
                                 "same path, or s3://bucket/prefix (the MLPERF_S3_* settings); the refresh that "
                                 "creates the lake needs it, readers read it from the catalog",
                                 read.checked(_team.check_data_path, "an absolute folder or s3://bucket/prefix"), "team"),
    "s3_access_key_id": Setting(None, "access key id for an s3:// data path (with s3_secret_access_key)", read.text,
                                "team"),
    "s3_secret_access_key": Setting(None, "secret access key for an s3:// data path (secret)", read.secret, "secrets"),
    "s3_session_token": Setting(None, "session token of temporary S3 credentials (secret)", read.secret, "secrets"),
    "s3_region": Setting(None, "region of the s3:// data path's bucket, e.g. eu-west-1",
                         read.checked(_team.check_s3_region, "an S3 region name"), "team"),
    "s3_endpoint": Setting(None, "host[:port] of an S3-compatible store (MinIO, R2, Ceph); unset: AWS",
                           read.checked(_team.check_s3_endpoint, "host[:port], no scheme or path"), "team"),
    "s3_url_style": Setting(None, "vhost or path (path for most S3-compatible stores); unset: DuckDB's default",
                            read.checked(_team.check_s3_url_style, "vhost or path"), "team"),
    "s3_use_ssl": Setting(True, "reach the S3 endpoint over https", read.flag, "team"),
    "bi_mirror": Setting(None, "a PostgreSQL database (postgresql://...; secret) into which a refresh mirrors every "
                         "public table (dim_, fct_, mart_) with its comments, for BI tools; unset: no mirror",
                         read.postgres_url, "secrets"),
    "bi_mirror_schema": Setting("mlperf", "the schema of that database the mirror replaces at each refresh "
                                "(built beside it as <schema>_staging, swapped in one transaction)", read.identifier,
                                "team"),
    "bi_reader_role": Setting("mlperf_reader", "the role that may read the mirror and nothing else: BI users are "
                              "made members of it", read.identifier, "team"),
    # the limits, one per `lib.io.limits.LIMITS` entry, each read within its range (`limits.accepted`)
    **{name: Setting(default, what, read.limit(name), "limits") for name, (default, what) in limits.LIMITS.items()},
}
# The settings read as Secret values (never shown, logged or stored): the `secrets` group.
SECRETS = tuple(name for name, setting in SETTINGS.items() if setting.group == "secrets")
# The settings that are URLs (or URL templates): any credentials in them are redacted wherever they go.
URLS = tuple(name for name in SETTINGS if name.endswith(("_url", "_url_template")))


def path_of(name: str) -> str:
    """Where a setting is in the settings object: `sources.rules_url_template`, `sources.suite(hpc).rounds`."""
    setting = SETTINGS[name]
    if setting.suite is not None:
        return f"{setting.group}.suite({setting.suite}).{setting.field}"
    return f"{setting.group}.{name}" if setting.group else name


def _frozen(name: str, fields, doc: str, methods: dict | None = None):
    made = dataclasses.make_dataclass(name, [(field, object) for field in fields], frozen=True,
                                      namespace={"__doc__": doc, **(methods or {})})
    made.__module__ = __name__
    return made


def _suite_source(self, suite) -> object:
    """A suite's sources (`SuiteSource`: its rounds, its results URL template), by Suite or name."""
    return self.by_suite[getattr(suite, "name", suite)]


def _loaded(self) -> list:
    """Each suite of the suite table with the rounds a refresh loads of it (none for a suite not in `suites`)."""
    from pipelines.lib.mlperf.suites import SUITES

    return [(suite, list(self.by_suite[name].rounds) if name in self.suites else []) for name, suite in SUITES.items()]


SuiteSource = _frozen("SuiteSource", dict.fromkeys(s.field for s in SETTINGS.values() if s.suite),
                      "One suite's sources: the rounds a refresh loads and where their results archives are.")
_GROUP_TYPES = {
    group: _frozen(group.capitalize(), [name for name, s in SETTINGS.items() if s.group == group and not s.suite]
                   + (["by_suite"] if group == "sources" else []),
                   f"The {group} settings (SETTINGS says what each is).",
                   {"suite": _suite_source, "loaded": _loaded} if group == "sources" else None)
    for group in GROUPS}


class _SettingsMethods:
    def value(self, name: str) -> object:
        """A setting's value by its name in SETTINGS (its variable's name without MLPERF_)."""
        setting = SETTINGS[name]
        holder = getattr(self, setting.group) if setting.group else self
        return getattr(holder.suite(setting.suite), setting.field) if setting.suite else getattr(holder, name)

    def replaced(self, **overrides) -> Settings:
        """These settings with `overrides` (setting name → value; None: not given) read as a variable's would be:
        how the CLI applies its flags, once."""
        return _assembled({name: self.value(name) for name in SETTINGS}, overrides)

    def build_parameters(self) -> BuildParameters:
        return BuildParameters(self.build.electricity_usd_per_kwh, self.build.pue)

    def team_catalog(self):
        """The team catalog (`lib.warehouse.team.TeamCatalog`) these settings describe, or None (the local file);
        ValueError when its settings do not fit together."""
        def value(secret):
            return secret.get_secret_value() if isinstance(secret, Secret) else secret
        team, secrets = self.team, self.secrets
        s3 = _team.S3Access(team.s3_access_key_id, value(secrets.s3_secret_access_key),
                            value(secrets.s3_session_token), team.s3_region, team.s3_endpoint, team.s3_url_style,
                            team.s3_use_ssl)
        return _team.team_catalog_of(value(secrets.catalog), team.catalog_data_path, s3,
                                     extensions_dir(self.paths.warehouse_dir.resolve()))

    def bi_mirror_target(self):
        """The PostgreSQL mirror for BI tools (`lib.warehouse.team.BiMirror`), or None."""
        if self.secrets.bi_mirror is None:
            return None
        return _team.BiMirror(self.secrets.bi_mirror.get_secret_value(), self.team.bi_mirror_schema,
                              self.team.bi_reader_role)

    def limit_values(self) -> dict[str, float]:
        return dataclasses.asdict(self.limits)

    def fingerprint(self) -> dict[str, object]:
        """Every setting as a refresh's request records it, by its flat name (the pre-flight manifest compares
        it with the last complete refresh's): secrets only as whether they are set."""
        from pipelines.lib.io.redaction import redact_url

        out: dict[str, object] = {}
        for name in SETTINGS:
            value = self.value(name)
            if name in SECRETS and value is not None and "://" in value.get_secret_value():
                out[name] = redact_url(value.get_secret_value())  # another database is another target
            elif name in SECRETS:
                out[name] = "set" if value is not None else None
            elif name in URLS and value is not None:  # recorded by a refresh: no URL's credentials
                out[name] = redact_url(value)
            elif name != "debug":
                out[name] = str(value) if isinstance(value, Path) else value
        return out


# One frozen object per group, a frozen field per setting in it. Plain dataclasses, not pydantic models: every
# command imports the settings first, and pydantic's import would be a large share of a short command such as a
# no-change refresh.
Settings = dataclasses.make_dataclass(
    "Settings", [*((group, object) for group in GROUPS), *((n, object) for n, s in SETTINGS.items() if not s.group)],
    bases=(_SettingsMethods,), frozen=True,
    namespace={"__doc__": "Every setting of mlperf-warehouse (MLPERF_<NAME>), by group: SETTINGS says what each is "
               "and where (`path_of`)."})
Settings.__module__ = __name__


def _from_environment() -> dict[str, str]:
    """Each setting's `MLPERF_<NAME>` variable that is set and not empty (the name in any letter case)."""
    prefix = limits.ENV_PREFIX.lower()
    environment = {name.lower(): value for name, value in os.environ.items() if name.lower().startswith(prefix)}
    return {name: environment[prefix + name] for name in SETTINGS if environment.get(prefix + name)}


def _assembled(values: dict[str, object], given: dict[str, object]) -> Settings:
    """The settings object of `values` (every setting's value) with `given` (name → text or flag value; None:
    not given) read over them. A value that is not valid raises ValueError naming its variable."""
    given = {k: v for k, v in given.items() if v is not None}
    values, problems = dict(values), []
    for name in given.keys() - SETTINGS.keys():
        problems.append(f"{limits.variable(name)}: no such setting")
    for name in SETTINGS.keys() & given.keys():
        try:
            values[name] = SETTINGS[name].read(given[name])
        except ValueError as exc:  # each problem names its variable once (a limit's message starts with it)
            text, variable = str(exc), limits.variable(name)
            problems.append(text if text.startswith(variable + " ") else f"{variable}: {text}")
    if problems:
        raise ValueError("invalid setting: " + "; ".join(sorted(problems)))
    groups = {group: {name: values[name] for name, s in SETTINGS.items() if s.group == group and not s.suite}
              for group in GROUPS}
    suites = {s.suite for s in SETTINGS.values() if s.suite}
    groups["sources"]["by_suite"] = {suite: SuiteSource(**{s.field: values[name] for name, s in SETTINGS.items()
                                                          if s.suite == suite}) for suite in sorted(suites)}
    settings = Settings(**{group: _GROUP_TYPES[group](**fields) for group, fields in groups.items()},
                        **{name: values[name] for name, s in SETTINGS.items() if not s.group})
    try:  # settings that must fit together
        settings.team_catalog()
    except ValueError as exc:
        raise ValueError(f"invalid setting: {exc}") from None
    return settings


def load_settings(**overrides) -> Settings:
    """The settings: each setting's environment variable, else its default; `overrides` (setting name → value,
    the CLI's flags; None meaning not given) win. A value that is not valid raises ValueError naming its
    variable."""
    return _assembled({name: setting.default for name, setting in SETTINGS.items()},
                      _from_environment() | {k: v for k, v in overrides.items() if v is not None})


def apply(settings: Settings) -> Settings:
    """Give the plain-function layer what it needs of the settings, for this process: one run context, activated.
    It keeps the secrets of the context it replaces: a message made before may be shown after."""
    from pipelines.lib.io.context import RunContext, activate, current
    from pipelines.lib.io.redaction import url_credentials

    secrets = set(current().secrets)
    for secret in vars(settings.secrets).values():
        if secret is None:
            continue
        if "://" in secret.get_secret_value():  # a database URL: its password is the secret, its host may be shown
            secrets |= url_credentials(secret.get_secret_value())
        else:
            secrets.add(secret.get_secret_value())
    for name in URLS:  # a mirror's password is used to download, and shown or stored nowhere
        secrets |= url_credentials(settings.value(name))
    activate(RunContext(warehouse_dir=settings.paths.warehouse_dir, limits=settings.limit_values(),
                        allowed_hosts=settings.sources.allowed_hosts, secrets=frozenset(secrets),
                        team_catalog=settings.team_catalog(), bi_mirror=settings.bi_mirror_target()))
    return settings
