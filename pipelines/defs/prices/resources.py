import os

import dagster as dg

from pipelines.defs.resources import Downloads
from pipelines.lib.prices.catalog import DEFAULT_CATALOG_URL

DEFAULT_AZURE_URL = "https://prices.azure.com"
DEFAULT_AWS_URL = "https://pricing.us-east-1.amazonaws.com"
DEFAULT_GCP_URL = "https://cloudbilling.googleapis.com"
DEFAULT_OCI_URL = "https://apexapps.oracle.com"


class PriceSources(Downloads):
    """Base URLs of the price APIs (the real API paths are appended), the GCP key, and retries."""

    azure_url: str = DEFAULT_AZURE_URL
    aws_url: str = DEFAULT_AWS_URL
    gcp_url: str = DEFAULT_GCP_URL
    oci_url: str = DEFAULT_OCI_URL
    catalog_url: str = DEFAULT_CATALOG_URL
    catalog_clouds: list[str] = []  # SkyPilot catalog clouds to read; empty = every default cloud
    gcp_api_key: str = ""  # a dg.EnvVar where set (price_sources_from_env): its value never enters the definitions
    aws_regions: list[str] = ["us-east-1"]
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    max_response_bytes: int | None = None
    max_aws_offer_bytes: int | None = None

    def policy(self):
        return self.retry_policy(timeout=(self.connect_timeout, self.read_timeout), max_bytes=self.max_response_bytes)


def price_sources_from_env(**overrides) -> PriceSources:
    """PriceSources from the MLPERF_* environment variables (keyword arguments win)."""
    values = dict(
        azure_url=dg.EnvVar("MLPERF_AZURE_PRICES_URL").get_value(DEFAULT_AZURE_URL) or DEFAULT_AZURE_URL,
        aws_url=dg.EnvVar("MLPERF_AWS_PRICING_URL").get_value(DEFAULT_AWS_URL) or DEFAULT_AWS_URL,
        gcp_url=dg.EnvVar("MLPERF_GCP_BILLING_URL").get_value(DEFAULT_GCP_URL) or DEFAULT_GCP_URL,
        oci_url=dg.EnvVar("MLPERF_OCI_PRICES_URL").get_value(DEFAULT_OCI_URL) or DEFAULT_OCI_URL,
        catalog_url=dg.EnvVar("MLPERF_PRICE_CATALOG_URL").get_value(DEFAULT_CATALOG_URL) or DEFAULT_CATALOG_URL,
        # the variable, not its value: Dagster resolves it when the resource starts, and shows its name only
        gcp_api_key=dg.EnvVar("MLPERF_GCP_API_KEY") if os.environ.get("MLPERF_GCP_API_KEY") else "",
    )
    return PriceSources(**(values | overrides))


@dg.definitions
def price_resources() -> dg.Definitions:
    from pipelines.defs.resources import locked

    return dg.Definitions(resources={"price_sources": locked(
        price_sources_from_env, "The cloud price lists' URLs (MLPERF_*_URL), the GCP key (MLPERF_GCP_API_KEY) and "
        "download limits.")})
