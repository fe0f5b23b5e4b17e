import dagster as dg

from pipelines.defs.resources import Downloads
from pipelines.lib.reference.sources import (
    DEFAULT_AWS_URL,
    DEFAULT_AZURE_URL,
    DEFAULT_CATALOG_URL,
    DEFAULT_GCP_URL,
    DEFAULT_GITHUB_API_URL,
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
    catalog_clouds: list[str] = []  # SkyPilot catalog clouds to read; empty = every cloud the catalog lists
    # where the catalog's tree is listed (empty: GitHub's API when catalog_url is raw.githubusercontent.com)
    catalog_listing_url: str = ""
    github_api_url: str = DEFAULT_GITHUB_API_URL
    gcp_api_key: str = ""  # a dg.EnvVar where set (price_sources_from_settings): its value is resolved at run start
    aws_regions: list[str] = ["us-east-1"]
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    max_response_bytes: int | None = None
    max_aws_offer_bytes: int | None = None

    def policy(self):
        return self.retry_policy(timeout=(self.connect_timeout, self.read_timeout), max_bytes=self.max_response_bytes)

    def catalog_listing(self) -> str | None:
        """The API that lists the catalog's tree (None: a folder lists itself, another mirror is probed)."""
        from pipelines.lib.prices.catalog import listing_api

        return listing_api(self.catalog_url, self.catalog_listing_url or None, self.github_api_url)

    def github_token(self) -> str | None:
        """The GitHub token for the catalog listing (a secret): read from the settings when needed, never kept in
        the resource's configuration."""
        token = load_settings().secrets.github_token
        return token.get_secret_value() if token is not None else None


def price_sources_from_settings(settings: Settings | None = None, **overrides) -> PriceSources:
    """PriceSources from the settings (default: loaded now); keyword arguments win."""
    settings = settings or load_settings()
    prices = settings.prices
    values = dict(
        azure_url=prices.azure_prices_url, aws_url=prices.aws_pricing_url, gcp_url=prices.gcp_billing_url,
        oci_url=prices.oci_prices_url, catalog_url=prices.price_catalog_url,
        catalog_listing_url=prices.price_catalog_listing_url or "", github_api_url=settings.sources.github_api_url,
        # the variable, not its value: Dagster resolves it when the resource starts, and shows its name only
        gcp_api_key=dg.EnvVar("MLPERF_GCP_API_KEY") if settings.secrets.gcp_api_key is not None else "",
    )
    return PriceSources(**(values | overrides))


@dg.definitions
def price_resources() -> dg.Definitions:
    from pipelines.defs.resources import locked

    return dg.Definitions(resources={"price_sources": locked(
        price_sources_from_settings, "The cloud price lists' URLs (MLPERF_*_URL), the GCP key (MLPERF_GCP_API_KEY) and "
        "download limits.")})
