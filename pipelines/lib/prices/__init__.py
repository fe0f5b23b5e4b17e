"""Pure parsers for cloud price lists (no Dagster import): raw response → normalized rows.

Each parser returns `ParsedPrices`: unpack it as `(prices, quarantine)`; it also carries
`skipped_non_accelerator` (records that are plainly not accelerator instances).
"""

from pipelines.lib.prices.aws import (
    aws_region_index_urls,
    parse_aws_offer,
    parse_aws_offer_path,
)
from pipelines.lib.prices.azure import (
    azure_next_page,
    is_repeating_link,
    parse_azure_retail_page,
    parse_azure_retail_pages,
)
from pipelines.lib.prices.catalog import parse_skypilot_vms_csv
from pipelines.lib.prices.curated import load_curated_prices
from pipelines.lib.prices.gcp import gcp_next_page_token, parse_gcp_skus
from pipelines.lib.prices.normalize import (
    PRICE_SCHEMA,
    QUARANTINE_SCHEMA,
    ParsedPrices,
    concat_parsed,
)
from pipelines.lib.prices.oci import parse_oci_products

__all__ = [
    "PRICE_SCHEMA", "QUARANTINE_SCHEMA", "ParsedPrices", "aws_region_index_urls", "azure_next_page",
    "concat_parsed", "gcp_next_page_token", "is_repeating_link", "load_curated_prices", "parse_aws_offer",
    "parse_aws_offer_path", "parse_azure_retail_page", "parse_azure_retail_pages", "parse_gcp_skus",
    "parse_oci_products", "parse_skypilot_vms_csv",
]
