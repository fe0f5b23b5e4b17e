"""Staged tables: validation into valid rows and quarantine, and the Parquet files a build loads."""
