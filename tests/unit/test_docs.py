"""The generated docs pages are what the code and SQL headers give now; every public column is described."""

import sys

import duckdb
import pytest

from pipelines.lib.warehouse.models import load_models
from support.mini_warehouse import build_warehouse
from support.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "docs"))
from generate import PAGES, README, generated_pages, readme_with_limits  # noqa: E402


@pytest.mark.parametrize("page", sorted(generated_pages()))
def test_generated_pages_are_up_to_date(page):
    committed = (PAGES / page).read_text(encoding="utf-8")
    assert committed == generated_pages()[page], f"docs/pages/{page} is stale: run `python docs/generate.py`"


def test_readme_lists_every_limit():
    text = README.read_text(encoding="utf-8")
    assert text == readme_with_limits(text), "README.md's limits table is stale: run `python docs/generate.py`"


def test_every_public_model_declares_every_column_with_its_type_and_a_description(tmp_path):
    base = tmp_path / "warehouse"
    build_warehouse(base)
    models = load_models()
    public = [m for m in models.values() if m.is_public]
    assert len(public) >= 16
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        for model in public:
            built = con.execute("select column_name, lower(data_type) from information_schema.columns "
                                "where table_name = ? order by ordinal_position", [model.name]).fetchall()
            declared = [(c.name, c.type) for c in model.columns]
            assert declared == built, f"{model.path}: the '-- columns:' block differs from the built table"
            assert all(len(c.description) >= 10 for c in model.columns), model.name
