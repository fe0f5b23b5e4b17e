"""Pure parsers for cloud price lists (no Dagster import): raw response → normalized rows.

Each parser returns `ParsedPrices` (`normalize.py`): unpack it as `(prices, quarantine)`; it also carries
`skipped_non_accelerator` (records that are plainly not accelerator instances).
"""
