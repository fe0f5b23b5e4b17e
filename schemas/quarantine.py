"""Pandera model of the quarantine: what was kept out of the warehouse, and why (staged `quarantine`,
published as `fct_quarantine`)."""

from __future__ import annotations

import pandera.polars as pa


class QuarantineRow(pa.DataFrameModel):
    source: str
    # The round or price snapshot; parsers leave it out, it is added when their rows are staged.
    partition: str | None = pa.Field(nullable=True)
    file: str = pa.Field(nullable=True)
    record: str = pa.Field(nullable=True)
    reason: str = pa.Field(str_length={"min_value": 1})
    payload: str = pa.Field(nullable=True)
