"""The allowed values of every enumerated column, written once (`vocabulary.csv`): parsers, Pandera
models, SQL models (through the seed `raw_vocabulary_seed`) and tests read them from here."""

from __future__ import annotations

import csv
import functools

from pipelines.lib.io.package_data import package_path

VOCABULARY_CSV = package_path(__package__, "vocabulary.csv")


@functools.cache
def _table() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    with VOCABULARY_CSV.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            found.setdefault(row["vocabulary"].strip(), []).append(row["value"].strip())
    return {name: tuple(values) for name, values in found.items()}


def values(vocabulary: str) -> tuple[str, ...]:
    """The allowed values of one vocabulary, in the file's order. KeyError for an unknown name."""
    return _table()[vocabulary]
