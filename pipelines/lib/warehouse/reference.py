"""The table reference of the docs (docs/pages/tables.md), made from the public models' headers.

Nothing here is written by hand: each public model's header declares its grain, what it reads and every
column with its type and a one-line description (`models.parse_columns`); `docs/generate.py` writes the
page and a test fails when the committed page differs from what the headers give.
"""

from __future__ import annotations

from pipelines.lib.warehouse.models import Model

INTRO = """\
# Table reference

The public tables of the warehouse: `dim_` (what things are), `fct_` (what happened) and `mart_`
(metrics). They are a contract: columns may be added, never renamed or given another meaning. Open the
published file read-only (`warehouse/mlperf.duckdb`) or export them (`mlperf-warehouse export`).

This page is generated from the SQL models' headers by `python docs/generate.py`; a test fails when it
is out of date. Columns without a description of their own share one meaning in every table
(`sql/glossary.csv`).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table_reference(models: dict[str, Model]) -> str:
    """Markdown: one section per public model, by name, with its grain, inputs and columns."""
    public = [models[name] for name in sorted(models) if models[name].is_public]
    parts = [INTRO, "| table | kind | grain | what it holds |", "|---|---|---|---|"]
    for model in public:
        grain = ", ".join(model.grain) if model.grain else f"none: {model.grain_note}"
        parts.append(f"| [`{model.name}`](#{model.name}) | {model.kind} | {_cell(grain)} | {_cell(model.description)} |")
    for model in public:
        grain = ", ".join(f"`{c}`" for c in model.grain) if model.grain else f"none: {model.grain_note}"
        reads = ", ".join(f"[`{d}`](#{d})" if d in models and models[d].is_public else f"`{d}`"
                          for d in model.depends_on)
        parts += ["", f"## {model.name}", "", model.description, "",
                  f"- **kind**: {model.kind}", f"- **grain**: {grain}", f"- **reads**: {reads}",
                  f"- **SQL**: `sql/{model.layer}/{model.name}.sql`", ""]
        if model.notes.strip():
            parts += ["```text", model.notes.strip("\n"), "```", ""]
        parts += ["| column | type | description |", "|---|---|---|"]
        parts += [f"| `{c.name}` | {c.type} | {_cell(c.description)} |" for c in model.columns]
    return "\n".join(parts) + "\n"
