"""HTML from Jinja2 templates (`templates/`, package data), autoescaped: every value a template shows is
escaped unless it is marked safe in Python, so an untrusted name from an archive is text wherever it lands.
The report and the results site both render here; what they show is assembled elsewhere
(`figures.py`, `site/builder.py`).
"""

from __future__ import annotations

from functools import cache

import jinja2

from pipelines.lib.report.figures import money


def is_number_cell(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cell(value, key: str = "") -> str:
    """A table cell as people read it: money for *_usd, percentages for efficiencies and MFU, minutes with two
    decimals, thousands separators, "—" for nothing."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else ""
    if key.endswith("_usd") and isinstance(value, (int, float)):
        return money(value)
    if isinstance(value, float):
        if "efficiency" in key or key == "mfu":
            return f"{value:.1%}"
        if key.endswith("minutes"):
            return f"{value:,.2f}"
        return f"{value:,.3g}" if abs(value) >= 1000 else f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def quantity(value) -> str:
    """A measured quantity as people read it: 101,611 tokens/s; 37.70; 0.0123; "—" for nothing."""
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"


def minutes(value) -> str:
    return f"{value:,.2f}" if value is not None else "—"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pipelines.lib.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True)
    env.filters.update(cell=cell, minutes=minutes, money=money, quantity=quantity)
    env.tests["number_cell"] = is_number_cell
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)
