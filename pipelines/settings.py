"""The operator's settings: one typed object, read from the environment once per process.

Every setting is an `MLPERF_<NAME>` environment variable (any letter case; empty means unset), else its
default. `load_settings()` reads them (the environment only: no `.env` file), the CLI's flags override
single fields (`load_settings(warehouse_dir=...)`), and `apply()` hands what the plain-function layer
needs to it: the warehouse folder, the limits, the hosts whose links may be followed and the secrets to
redact. `pipelines/lib` never reads the environment; Dagster's resources are built from these settings
when a run starts (`pipelines/defs/resources.py`), the CLI builds the same resources from the settings it
loaded. The docs' settings page is generated from this module (`settings_reference`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from pathlib import Path

from pipelines.lib.io import limits
from pipelines.lib.io.paths import DEFAULT_WAREHOUSE_DIR, extensions_dir
from pipelines.lib.mlperf.rounds import normalize_round
from pipelines.lib.reference.sources import (
    DEFAULT_AWS_URL,
    DEFAULT_AZURE_URL,
    DEFAULT_CATALOG_URL,
    DEFAULT_GCP_URL,
    DEFAULT_GITHUB_API_URL,
    DEFAULT_HPC_RESULTS_URL_TEMPLATE,
    DEFAULT_HPC_ROUNDS,
    DEFAULT_INFERENCE_RESULTS_URL_TEMPLATE,
    DEFAULT_INFERENCE_ROUNDS,
    DEFAULT_OCI_URL,
    DEFAULT_RESULTS_URL_TEMPLATE,
    DEFAULT_ROUNDS,
    DEFAULT_RULES_URL_TEMPLATE,
)
from pipelines.lib.warehouse.parameters import DEFAULT_PUE, PUE_SOURCE, BuildParameters


class Secret:
    """A secret setting's value: `get_secret_value()` gives it; repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# Readers: a setting's value from its variable's text (or a flag's value); ValueError says why it is not one.
def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"not text: {value!r}")
    return value


def _path(value: object) -> Path:
    if not isinstance(value, (str, Path)):
        raise ValueError(f"not a path: {value!r}")
    return Path(value)


def _comma_list(value: object) -> list[str]:
    """`a,b,c` in the environment (not JSON), or a list given by a flag."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ValueError(f"not a comma-separated list: {value!r}")


def _rounds(value: object) -> list[str]:
    return [normalize_round(r) for r in _comma_list(value)]


def _suites(value: object) -> list[str]:
    from pipelines.lib.mlperf.suites import suite_named

    return [suite_named(s).name for s in _comma_list(value)]


_TRUE, _FALSE = {"1", "true", "t", "yes", "y", "on"}, {"0", "false", "f", "no", "n", "off"}


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"not true or false: {value!r}")


def _float(value: object) -> float:
    """A finite number from a variable's text or a flag's value (`1e9`, `1_000_000`); NaN, ±inf and `1e400`
    (which reads as inf) are refused here, before any limit compares with them."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"not a number: {value!r}")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise ValueError(f"not a number: {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


def _number(low: float | None = None, high: float | None = None, above: float | None = None) -> Callable:
    """A finite number, greater than `above`, at least `low` and at most `high` where given."""
    bounds = " and ".join([*([f"greater than {above:g}"] if above is not None else []),
                           *([f"at least {low:g}"] if low is not None else []),
                           *([f"at most {high:g}"] if high is not None else [])]) or "at all"

    def read(value: object) -> float:
        try:
            number = _float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number {bounds}") from None
        if (low is not None and number < low) or (high is not None and number > high) \
                or (above is not None and number <= above):
            raise ValueError(f"{value!r} is not a number {bounds}")
        return number
    read.accepted = f"a number {bounds}"
    return read


def _limit(name: str) -> Callable:
    """A limit's value: a finite number in the limit's range, whole where it counts (`limits.accepted`)."""
    def read(value: object) -> float:
        try:
            number = _float(value)
        except ValueError:
            raise ValueError(f"{limits.variable(name)} must be {limits.describe(name)}, not {value!r}") from None
        return limits.check(name, number, given=value)
    read.accepted = limits.describe(name)
    return read


def _url_template(placeholder: str, what: str) -> Callable:
    """A URL template: http(s), file:// or a path, its placeholder in the URL's path (`rounds.url_template`)."""
    from pipelines.lib.mlperf.rounds import url_template

    def read(value: object) -> str:
        return url_template(_text(value), "", placeholder, what)
    read.accepted = f"http(s), file:// or a path, with `{placeholder}` in its path"
    return read


def _url(value: object) -> str:
    """A base URL: http(s) with a host, file:// or a path (what the downloads read), nothing else."""
    from urllib.parse import urlsplit

    from pipelines.lib.io.redaction import redact_url

    text = _text(value)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  - a port that is no number raises here
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc}): {redact_url(text)!r}") from None
    scheme = parts.scheme.lower()
    if scheme in ("http", "https") and not parts.hostname:
        raise ValueError(f"names no host: {redact_url(text)!r}")
    if scheme not in ("http", "https", "file") and len(scheme) > 1:
        raise ValueError(f"must be http(s), file:// or a path, not {scheme}://: {redact_url(text)!r}")
    return text


def _secret(value: object) -> Secret:
    return Secret(_text(value))


def _checked(check: Callable[[str], str], accepted: str, *, secret: bool = False) -> Callable:
    """Text checked by `check` (a `lib.warehouse.team` check: ValueError says why not), kept a Secret if `secret`."""
    def read(value: object) -> object:
        text = check(_text(value).strip())
        return Secret(text) if secret else text
    read.accepted, read.secret = accepted, secret
    return read


def _team_checks():
    from pipelines.lib.warehouse import team

    return team


# What each reader accepts, for the settings page (readers made by a function above set their own).
_text.accepted = "text"
_path.accepted = "a folder"
_comma_list.accepted = "a comma-separated list"
_rounds.accepted = "comma-separated rounds, e.g. v4.1,5.0"
_suites.accepted = "comma-separated: training, hpc, inference"
_flag.accepted = "true or false (1, yes, on; 0, no, off)"
_secret.accepted = "text, kept secret"
_secret.secret = True
_team = _team_checks()
_postgres_url = _checked(_team.check_postgres_url, "a postgresql:// URL with a host and a database, kept secret",
                         secret=True)
_identifier = _checked(_team.check_identifier, "a lower-case PostgreSQL name (letters, digits, _)")
_url.accepted = "http(s) with a host, file:// or a path"


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: its default, what it sets (the docs' settings page), and how a value given for it is read
    (never None: an empty variable or a flag not given leaves the default, which may be None)."""

    default: object
    description: str
    read: Callable[[object], object]


SETTINGS: dict[str, Setting] = {
    "warehouse_dir": Setting(DEFAULT_WAREHOUSE_DIR, "where the warehouse lives (every command's --warehouse-dir); "
                             "relative to the current directory", _path),
    "rounds": Setting(_comma_list(DEFAULT_ROUNDS), "the rounds a refresh loads (comma-separated; the refresh's "
                      "--rounds); left at the default, every later round GitHub lists is loaded too", _rounds),
    "results_url_template": Setting(DEFAULT_RESULTS_URL_TEMPLATE, "where a round's results archive is fetched "
                                    "({version}: v4.1); http(s), file:// or a path",
                                    _url_template("{version}", "results")),
    "hpc_rounds": Setting(_comma_list(DEFAULT_HPC_ROUNDS), "the MLPerf HPC rounds a refresh loads (comma-separated; "
                          "the refresh's --rounds with --suites hpc); left at the default, every later round GitHub "
                          "lists too", _rounds),
    "hpc_results_url_template": Setting(DEFAULT_HPC_RESULTS_URL_TEMPLATE, "where an MLPerf HPC round's results "
                                        "archive is fetched ({version}: v3.0)",
                                        _url_template("{version}", "HPC results")),
    "inference_rounds": Setting(_comma_list(DEFAULT_INFERENCE_ROUNDS), "the MLPerf Inference rounds a refresh "
                                "loads when the inference suite is on (default: every round from v4.0, and every "
                                "later round GitHub lists)", _rounds),
    "inference_results_url_template": Setting(DEFAULT_INFERENCE_RESULTS_URL_TEMPLATE, "where an MLPerf Inference "
                                              "round's results archive is fetched ({version}: v5.1)",
                                              _url_template("{version}", "Inference results")),
    "suites": Setting(["training", "hpc"], "the MLPerf suites a refresh loads (comma-separated: training, hpc, "
                      "inference; the refresh's --suites). Inference is opt-in: its upstream archives hold every "
                      "detail log, gigabytes per round", _suites),
    "rules_url_template": Setting(DEFAULT_RULES_URL_TEMPLATE, "where the mlcommons/logging archive of a rules ref "
                                  "is fetched ({ref})", _url_template("{ref}", "rules")),
    "rules_default_ref": Setting(None, "the rules ref of every round rules_refs.csv does not list (default: "
                                 "discovered: the round's newest release tag that ships its rules, else "
                                 "mlcommons/logging's default branch)", _text),
    "trust_rules_refs": Setting([], "rules refs used although their content is not the digest they are pinned to "
                                "(rules_refs.csv, or the warehouse's record on first use: they are re-pinned); "
                                "comma-separated; refresh --trust-rules-ref", _comma_list),
    "accept_shrink": Setting(False, "publish a round whose counted results shrank by more than max_shrink "
                             "(refresh --accept-shrink)", _flag),
    "azure_prices_url": Setting(DEFAULT_AZURE_URL, "base URL of the Azure Retail Prices API", _url),
    "aws_pricing_url": Setting(DEFAULT_AWS_URL, "base URL of the AWS Price List Bulk API", _url),
    "gcp_billing_url": Setting(DEFAULT_GCP_URL, "base URL of the Google Cloud Billing Catalog API", _url),
    "gcp_api_key": Setting(None, "API key of the Cloud Billing Catalog API (secret: sent in a header, redacted "
                           "everywhere); unset: the GCP API is skipped", _secret),
    "oci_prices_url": Setting(DEFAULT_OCI_URL, "base URL of Oracle Cloud's price list API", _url),
    "price_catalog_url": Setting(DEFAULT_CATALOG_URL, "base URL of SkyPilot's catalog: raw.githubusercontent.com, "
                                 "another HTTP mirror, file:// or a folder", _url),
    "price_catalog_listing_url": Setting(None, "GitHub's REST API (or a mirror of it) where the catalog repository's "
                                         "tree lists its versions and clouds (unset: github_api_url when "
                                         "price_catalog_url is on raw.githubusercontent.com; a folder is listed "
                                         "itself; another mirror is probed)", _url),
    "github_api_url": Setting(DEFAULT_GITHUB_API_URL, "GitHub's REST API (or a mirror): round discovery, and the "
                              "tags and default branch of mlcommons/logging for the rules of new rounds, the SkyPilot "
                              "catalog's tree", _url),
    "github_token": Setting(None, "GitHub token for round, rules and catalog discovery (secret; optional, raises the rate "
                            "limit)", _secret),
    "allowed_hosts": Setting([], "hosts, besides each configured URL's own, whose links (AWS currentVersionUrl, "
                             "Azure NextPageLink, GitHub next) are followed", _comma_list),
    "electricity_usd_per_kwh": Setting(None, "electricity price for energy costs, USD per kWh (unset: energy "
                                       "costs are not computed)", _number(above=0, high=10)),
    "pue": Setting(DEFAULT_PUE, f"power usage effectiveness applied to measured energy ({PUE_SOURCE})",
                   _number(low=1, high=5)),
    "debug": Setting(False, "show Dagster's errors with their tracebacks", _flag),
    # Team mode (docs: Operating a team warehouse): a DuckLake catalog, its data path, a PostgreSQL mirror for BI
    "catalog": Setting(None, "the team warehouse: the PostgreSQL database of its DuckLake catalog "
                       "(postgresql://user:password@host:5432/dbname; secret). Set, a refresh publishes into the "
                       "DuckLake (one snapshot per refresh) and every command reads it; unset, the local file",
                       _postgres_url),
    "catalog_data_path": Setting(None, "where the DuckLake's Parquet files go: a folder every machine mounts at the "
                                 "same path, or s3://bucket/prefix (the MLPERF_S3_* settings); the refresh that "
                                 "creates the lake needs it, readers read it from the catalog",
                                 _checked(_team.check_data_path, "an absolute folder or s3://bucket/prefix")),
    "s3_access_key_id": Setting(None, "access key id for an s3:// data path (with s3_secret_access_key)", _text),
    "s3_secret_access_key": Setting(None, "secret access key for an s3:// data path (secret)", _secret),
    "s3_session_token": Setting(None, "session token of temporary S3 credentials (secret)", _secret),
    "s3_region": Setting(None, "region of the s3:// data path's bucket, e.g. eu-west-1",
                         _checked(_team.check_s3_region, "an S3 region name")),
    "s3_endpoint": Setting(None, "host[:port] of an S3-compatible store (MinIO, R2, Ceph); unset: AWS",
                           _checked(_team.check_s3_endpoint, "host[:port], no scheme or path")),
    "s3_url_style": Setting(None, "vhost or path (path for most S3-compatible stores); unset: DuckDB's default",
                            _checked(_team.check_s3_url_style, "vhost or path")),
    "s3_use_ssl": Setting(True, "reach the S3 endpoint over https", _flag),
    "bi_mirror": Setting(None, "a PostgreSQL database (postgresql://...; secret) into which a refresh mirrors every "
                         "public table (dim_, fct_, mart_) with its comments, for BI tools; unset: no mirror",
                         _postgres_url),
    "bi_mirror_schema": Setting("mlperf", "the schema of that database the mirror replaces at each refresh "
                                "(built beside it as <schema>_staging, swapped in one transaction)", _identifier),
    "bi_reader_role": Setting("mlperf_reader", "the role that may read the mirror and nothing else: BI users are "
                              "made members of it", _identifier),
    # the limits, one per `lib.io.limits.LIMITS` entry, each read within its range (`limits.accepted`)
    **{name: Setting(default, what, _limit(name)) for name, (default, what) in limits.LIMITS.items()},
}
# The settings read as Secret values (never shown, logged or stored): named by their reader alone.
SECRETS = tuple(name for name, setting in SETTINGS.items() if getattr(setting.read, "secret", False))
# The settings that are URLs (or URL templates): any credentials in them are redacted wherever they go.
URLS = tuple(name for name in SETTINGS if name.endswith(("_url", "_url_template")))


class _SettingsMethods:
    def build_parameters(self) -> BuildParameters:
        return BuildParameters(self.electricity_usd_per_kwh, self.pue)

    def team_catalog(self):
        """The team catalog (`lib.warehouse.team.TeamCatalog`) these settings describe, or None (the local file);
        ValueError when its settings do not fit together."""
        def value(name):
            secret = getattr(self, name)
            return secret.get_secret_value() if isinstance(secret, Secret) else secret
        s3 = _team.S3Access(self.s3_access_key_id, value("s3_secret_access_key"), value("s3_session_token"),
                            self.s3_region, self.s3_endpoint, self.s3_url_style, self.s3_use_ssl)
        return _team.team_catalog_of(value("catalog"), self.catalog_data_path, s3,
                                     extensions_dir(self.warehouse_dir.resolve()))

    def bi_mirror_target(self):
        """The PostgreSQL mirror for BI tools (`lib.warehouse.team.BiMirror`), or None."""
        if self.bi_mirror is None:
            return None
        return _team.BiMirror(self.bi_mirror.get_secret_value(), self.bi_mirror_schema, self.bi_reader_role)

    def limit_values(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in limits.LIMITS}

    def fingerprint(self) -> dict[str, object]:
        """Every setting as a refresh's request records it: secrets only as whether they are set."""
        from pipelines.lib.io.redaction import redact_url

        out: dict[str, object] = {}
        for name in SETTINGS:
            value = getattr(self, name)
            if name in SECRETS and value is not None and "://" in value.get_secret_value():
                out[name] = redact_url(value.get_secret_value())  # another database is another target
            elif name in SECRETS:
                out[name] = "set" if value is not None else None
            elif name in URLS and value is not None:  # recorded by a refresh: no URL's credentials
                out[name] = redact_url(value)
            elif name != "debug":
                out[name] = str(value) if isinstance(value, Path) else value
        return out


# One frozen field per setting. A plain dataclass, not a pydantic model: every command imports the settings
# first, and pydantic's import would be a large share of a short command such as a no-change refresh.
Settings = dataclasses.make_dataclass(
    "Settings", [(name, object) for name in SETTINGS], bases=(_SettingsMethods,), frozen=True,
    namespace={"__doc__": "Every setting of mlperf-warehouse (MLPERF_<NAME>): SETTINGS says what each is."})
Settings.__module__ = __name__


def _from_environment() -> dict[str, str]:
    """Each setting's `MLPERF_<NAME>` variable that is set and not empty (the name in any letter case)."""
    prefix = limits.ENV_PREFIX.lower()
    environment = {name.lower(): value for name, value in os.environ.items() if name.lower().startswith(prefix)}
    return {name: environment[prefix + name] for name in SETTINGS if environment.get(prefix + name)}


def load_settings(**overrides) -> Settings:
    """The settings: each setting's environment variable, else its default; `overrides` (the CLI's flags, None
    meaning not given) win. A value that is not valid raises ValueError naming its variable."""
    given = _from_environment() | {k: v for k, v in overrides.items() if v is not None}
    values, problems = {}, []
    for name in given.keys() - SETTINGS.keys():
        problems.append(f"{limits.variable(name)}: no such setting")
    for name, setting in SETTINGS.items():
        if name not in given:
            values[name] = setting.default
            continue
        try:
            values[name] = setting.read(given[name])
        except ValueError as exc:  # each problem names its variable once (a limit's message starts with it)
            text, variable = str(exc), limits.variable(name)
            problems.append(text if text.startswith(variable + " ") else f"{variable}: {text}")
    if problems:
        raise ValueError("invalid setting: " + "; ".join(sorted(problems)))
    settings = Settings(**values)
    try:  # settings that must fit together
        settings.team_catalog()
    except ValueError as exc:
        raise ValueError(f"invalid setting: {exc}") from None
    return settings


def apply(settings: Settings) -> Settings:
    """Give the plain-function layer what it needs of the settings, for this process: one run context, activated.
    It keeps the secrets of the context it replaces: a message made before may be shown after."""
    from pipelines.lib.io.context import RunContext, activate, current
    from pipelines.lib.io.redaction import url_credentials

    secrets = set(current().secrets)
    for name in SECRETS:
        secret = getattr(settings, name)
        if secret is None:
            continue
        if "://" in secret.get_secret_value():  # a database URL: its password is the secret, its host may be shown
            secrets |= url_credentials(secret.get_secret_value())
        else:
            secrets.add(secret.get_secret_value())
    for name in URLS:  # a mirror's password is used to download, and shown or stored nowhere
        secrets |= url_credentials(getattr(settings, name))
    activate(RunContext(warehouse_dir=settings.warehouse_dir, limits=settings.limit_values(),
                        allowed_hosts=settings.allowed_hosts, secrets=frozenset(secrets),
                        team_catalog=settings.team_catalog(), bi_mirror=settings.bi_mirror_target()))
    return settings
