import dagster as dg

from pipelines.defs.resources import Downloads
from pipelines.lib.reference.sources import (
    DEFAULT_AWS_URL,
    DEFAULT_AZURE_URL,
    DEFAULT_CATALOG_URL,
    DEFAULT_GCP_URL,
    DEFAULT_OCI_URL,
)
from pipelines.settings import Settings, load_settings


class PriceSources(Downloads):
    """Base URLs of the price APIs (the real API paths are appended), the GCP key, and retries."""

    azure_url: str = DEFAULT_AZURE_URL
    aws_url: str = DEFAULT_AWS_URL
    gcp_url: str = DEFAULT_GCP_URL
    oci_url: str = DEFAULT_OCI_URL
    catalog_url: str = DEFAULT_CATALOG_URL
    catalog_clouds: list[str] = []  # SkyPilot catalog clouds to read; empty = every default cloud
    gcp_api_key: str = ""  # a dg.EnvVar where set (price_sources_from_settings): its value is resolved at run start
    aws_regions: list[str] = ["us-east-1"]
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    max_response_bytes: int | None = None
    max_aws_offer_bytes: int | None = None

    def policy(self):
        return self.retry_policy(timeout=(self.connect_timeout, self.read_timeout), max_bytes=self.max_response_bytes)


def price_sources_from_settings(settings: Settings | None = None, **overrides) -> PriceSources:
    """PriceSources from the settings (default: loaded now); keyword arguments win."""
    settings = settings or load_settings()
    values = dict(
        azure_url=settings.azure_prices_url, aws_url=settings.aws_pricing_url, gcp_url=settings.gcp_billing_url,
        oci_url=settings.oci_prices_url, catalog_url=settings.price_catalog_url,
        # the variable, not its value: Dagster resolves it when the resource starts, and shows its name only
        gcp_api_key=dg.EnvVar("MLPERF_GCP_API_KEY") if settings.gcp_api_key is not None else "",
    )
    return PriceSources(**(values | overrides))


@dg.definitions
def price_resources() -> dg.Definitions:
    from pipelines.defs.resources import locked

    return dg.Definitions(resources={"price_sources": locked(
        price_sources_from_settings, "The cloud price lists' URLs (MLPERF_*_URL), the GCP key (MLPERF_GCP_API_KEY) and "
        "download limits.")})
