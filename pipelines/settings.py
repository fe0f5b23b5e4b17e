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

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, create_model, field_validator

from pipelines.lib.io import limits
from pipelines.lib.io.paths import DEFAULT_WAREHOUSE_DIR
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

CommaList = list[str]  # `a,b,c` in the environment (split by `_split`), not JSON


def _comma_list(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class BaseMlperfSettings(BaseModel):
    """Sources, folders and behaviour. The limits are added below, one field per `lib.io.limits.LIMITS` entry.
    A plain pydantic model filled by `load_settings` from the environment: pydantic-settings did the same
    reading but cost a fifth of a second of imports on every command (a no-change refresh is ~0.4 s)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warehouse_dir: Path = Field(DEFAULT_WAREHOUSE_DIR, description="where the warehouse lives (every command's "
                                "--warehouse-dir); relative to the current directory")
    rounds: CommaList = Field(_comma_list(DEFAULT_ROUNDS), description="the rounds a refresh loads "
                              "(comma-separated; the refresh's --rounds)")
    results_url_template: str = Field(DEFAULT_RESULTS_URL_TEMPLATE, description="where a round's results archive "
                                      "is fetched ({version}: v4.1); http(s), file:// or a path")
    hpc_rounds: CommaList = Field(_comma_list(DEFAULT_HPC_ROUNDS), description="the MLPerf HPC rounds a refresh "
                                  "loads (comma-separated; the refresh's --rounds with --suites hpc)")
    hpc_results_url_template: str = Field(DEFAULT_HPC_RESULTS_URL_TEMPLATE, description="where an MLPerf HPC "
                                          "round's results archive is fetched ({version}: v3.0)")
    inference_rounds: CommaList = Field(_comma_list(DEFAULT_INFERENCE_ROUNDS), description="the MLPerf Inference "
                                        "rounds a refresh loads when the inference suite is on")
    inference_results_url_template: str = Field(DEFAULT_INFERENCE_RESULTS_URL_TEMPLATE, description="where an MLPerf "
                                                "Inference round's results archive is fetched ({version}: v5.1)")
    suites: CommaList = Field(["training", "hpc"], description="the MLPerf suites a refresh loads (comma-separated: "
                              "training, hpc, inference; the refresh's --suites). Inference is opt-in: its upstream "
                              "archives hold every detail log, gigabytes per round")
    rules_url_template: str = Field(DEFAULT_RULES_URL_TEMPLATE, description="where the mlcommons/logging archive "
                                    "of a rules ref is fetched ({ref})")
    rules_default_ref: str | None = Field(None, description="the rules ref of a round rules_refs.csv does not "
                                          "list (default: the newest ref of the table)")
    trust_rules_refs: CommaList = Field([], description="rules refs used although their content is not the "
                                        "digest rules_refs.csv pins (comma-separated; refresh --trust-rules-ref)")
    accept_shrink: bool = Field(False, description="publish a round whose counted results shrank by more than "
                                "max_shrink (refresh --accept-shrink)")
    azure_prices_url: str = Field(DEFAULT_AZURE_URL, description="base URL of the Azure Retail Prices API")
    aws_pricing_url: str = Field(DEFAULT_AWS_URL, description="base URL of the AWS Price List Bulk API")
    gcp_billing_url: str = Field(DEFAULT_GCP_URL, description="base URL of the Google Cloud Billing Catalog API")
    gcp_api_key: SecretStr | None = Field(None, description="API key of the Cloud Billing Catalog API (secret: "
                                          "sent in a header, redacted everywhere); unset: the GCP API is skipped")
    oci_prices_url: str = Field(DEFAULT_OCI_URL, description="base URL of Oracle Cloud's price list API")
    price_catalog_url: str = Field(DEFAULT_CATALOG_URL, description="base URL of SkyPilot's catalog")
    github_api_url: str = Field(DEFAULT_GITHUB_API_URL, description="GitHub's REST API, for round discovery")
    github_token: SecretStr | None = Field(None, description="GitHub token for round discovery (secret; optional, "
                                           "raises the rate limit)")
    allowed_hosts: CommaList = Field([], description="hosts, besides each configured URL's own, whose links "
                                     "(AWS currentVersionUrl, Azure NextPageLink, GitHub next) are followed")
    electricity_usd_per_kwh: float | None = Field(None, gt=0, description="electricity price for energy costs, "
                                                  "USD per kWh (unset: energy costs are not computed)")
    pue: float = Field(DEFAULT_PUE, ge=1, le=5,
                       description=f"power usage effectiveness applied to measured energy ({PUE_SOURCE})")
    debug: bool = Field(False, description="show Dagster's errors with their tracebacks")

    @field_validator("rounds", "hpc_rounds", "inference_rounds", "suites", "trust_rules_refs", "allowed_hosts",
                     mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return _comma_list(value)

    @field_validator("rounds", "hpc_rounds", "inference_rounds")
    @classmethod
    def _rounds(cls, value: list[str]) -> list[str]:
        return [normalize_round(r) for r in value]

    @field_validator("suites")
    @classmethod
    def _suites(cls, value: list[str]) -> list[str]:
        from pipelines.lib.mlperf.suites import suite_named

        return [suite_named(s).name for s in value]

    def build_parameters(self) -> BuildParameters:
        return BuildParameters(self.electricity_usd_per_kwh, self.pue)

    def limit_values(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in limits.LIMITS}

    def fingerprint(self) -> dict[str, object]:
        """Every setting as a refresh's request records it: secrets only as whether they are set."""
        out: dict[str, object] = {}
        for name, value in self.model_dump().items():
            if name in SECRETS:
                out[name] = "set" if value is not None else None
            elif name != "debug":
                out[name] = str(value) if isinstance(value, Path) else value
        return out


SECRETS = ("gcp_api_key", "github_token")  # SecretStr fields: never shown, logged or stored


def _limit_field(name: str) -> tuple[type, object]:
    default, what = limits.LIMITS[name]
    return float, Field(default, description=what)


Settings = create_model(
    "Settings", __base__=BaseMlperfSettings, __doc__="Every setting of mlperf-warehouse (MLPERF_<NAME>).",
    **{name: _limit_field(name) for name in limits.LIMITS})


def _from_environment() -> dict[str, str]:
    """Each field's `MLPERF_<NAME>` variable that is set and not empty (the name in any letter case)."""
    prefix = limits.ENV_PREFIX.lower()
    environment = {name.lower(): value for name, value in os.environ.items() if name.lower().startswith(prefix)}
    return {field: environment[prefix + field] for field in Settings.model_fields if environment.get(prefix + field)}


def load_settings(**overrides) -> BaseMlperfSettings:
    """The settings: each field's environment variable, else its default; `overrides` (the CLI's flags, None
    meaning not given) win. A value that is not valid raises ValueError naming its variable."""
    given = _from_environment() | {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = Settings(**given)
    except Exception as exc:  # pydantic's ValidationError: name the variables, not the model
        from pydantic import ValidationError

        if not isinstance(exc, ValidationError):
            raise
        problems = "; ".join(f"{limits.ENV_PREFIX}{str(e['loc'][0]).upper()}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"invalid setting: {problems}") from None
    for name, value in settings.limit_values().items():
        limits.check(name, value)
    return settings


def apply(settings: BaseMlperfSettings) -> BaseMlperfSettings:
    """Give the plain-function layer what it needs of the settings, for this process."""
    from pipelines.lib.io.http import configure_allowed_hosts
    from pipelines.lib.io.paths import configure_warehouse_dir
    from pipelines.lib.io.redaction import register_secret

    limits.configure(settings.limit_values())
    configure_warehouse_dir(settings.warehouse_dir)
    configure_allowed_hosts(settings.allowed_hosts)
    for name in SECRETS:
        secret = getattr(settings, name)
        if secret is not None:
            register_secret(secret.get_secret_value())
    return settings


def _shown(name: str, value: object) -> str:
    if value is None or value == [] or value == "":
        return "(unset)"
    if name in limits.LIMITS:
        if name in limits.SHARES:
            return f"{value:g}"
        if name.endswith("_bytes") or name.endswith("_bytes_per_second"):
            text = limits.human(value)
            return text + ("/s" if name.endswith("per_second") else "")
        return f"{value:g}"
    if isinstance(value, list):
        return ",".join(value) if len(",".join(value)) < 40 else f"{value[0]} … {value[-1]} ({len(value)})"
    return str(value)


def settings_reference() -> str:
    """Markdown table of every setting: variable, default, what it does (docs/pages/settings.md)."""
    lines = ["| variable | default | what it sets |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = _shown(name, field.default)
        lines.append(f"| `{limits.ENV_PREFIX}{name.upper()}` | `{default}` | {field.description} |")
    return "\n".join(lines) + "\n"
