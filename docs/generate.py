"""Write the generated pages of the docs: `python docs/generate.py` (a test fails when they are stale).

- pages/tables.md: the table reference, from the public SQL models' headers.
- pages/settings.md: every setting and limit, from the settings object (pipelines/settings.py).
- pages/mlcommons-summary.md: the fields of `export --format mlcommons-summary`.
"""

from __future__ import annotations

import sys
from pathlib import Path

PAGES = Path(__file__).resolve().parent / "pages"


SETTINGS_INTRO = """\
# Settings and limits

Every setting is an environment variable, read once when a command or a Dagster run starts
(`pipelines/settings.py`, a typed settings object); a command's flags win over it (`--warehouse-dir`,
`--results-url-template`, `--rules-url-template`, `--accept-shrink`, `--trust-rules-ref`, `query
--timeout` and `--memory-limit`). A value that is not valid stops the command with one line naming the
variable. Numbers accept `1e9` and `1_000_000`; lists are comma-separated. Dagster run config cannot
change any of them: a run launched from the UI uses the operator's settings.

What each limit protects against, and what happens over it, is on [Operating](operating.md#limits-and-safety).
This page is generated from the settings object by `python docs/generate.py`.

"""


SUMMARY_INTRO = """\
# MLCommons summary export

`mlperf-warehouse export --format mlcommons-summary --out DIR` writes `DIR/summary_results.json`: one record
per published Training result, in the fields and JSON types of the `summary_results.json` MLCommons publishes
for Inference (which its results-site template loads), so tools made for that file read Training too. A
test holds every record to the list below and the names and types to MLCommons' own file (the shared v5.1
Inference round's). This page is generated from `pipelines/lib/warehouse/mlcommons_summary.py`.

"""


def generated_pages() -> dict[str, str]:
    """Page file name → its content, as the code and SQL headers give it now."""
    from pipelines.lib.warehouse.mlcommons_summary import SUMMARY_FIELDS
    from pipelines.lib.warehouse.models import load_models
    from pipelines.lib.warehouse.reference import table_reference
    from pipelines.settings import settings_reference

    summary = SUMMARY_INTRO + "| field | type | what it holds |\n|---|---|---|\n" + "".join(
        f"| `{name}` | {kind.__name__} | {meaning} |\n" for name, kind, meaning in SUMMARY_FIELDS)
    return {"tables.md": table_reference(load_models()), "settings.md": SETTINGS_INTRO + settings_reference(),
            "mlcommons-summary.md": summary}


def main() -> int:
    for name, text in generated_pages().items():
        path = PAGES / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
