"""The export queries (`sql/exports/`) are SQL files with headers like the models': each names what it reads,
which DuckDB's own parser confirms, and its grain; one per suite for MLCommons' summary."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.lib.mlperf.suites import SUITES
from pipelines.lib.warehouse.mlcommons_summary import export_query
from pipelines.lib.warehouse.models import load_models, parse_header, relations_read, sql_dir

EXPORTS = sorted((sql_dir() / "exports").glob("*.sql"))
KEYS = ("export", "grain", "depends on", "description")


def test_one_summary_query_per_suite():
    assert {p.stem for p in EXPORTS} == {f"mlcommons_summary_{name}" for name in SUITES}
    assert all(export_query(name).lstrip().startswith("-- export: ") for name in SUITES)


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_each_export_says_what_it_reads_and_its_grain(path):
    text = path.read_text(encoding="utf-8")
    header = parse_header(text, str(path), KEYS)
    assert header["export"] == path.stem and header["description"]
    declared = {name.strip() for name in header["depends on"].split(",")}
    models = load_models()
    assert declared <= set(models), declared - set(models)
    with duckdb.connect() as con:
        assert relations_read(con, text) == declared
    columns = {c.name for name in declared for c in models[name].columns}
    assert {g.strip() for g in header["grain"].split(",")} <= columns
