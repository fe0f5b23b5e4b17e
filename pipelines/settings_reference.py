"""The settings and the limits as Markdown tables, for the docs (docs/generate.py writes docs/pages/settings.md and
README's limits table from them; a test holds both current)."""

from __future__ import annotations

from pipelines.lib.io import limits
from pipelines.settings import SETTINGS, path_of


def _shown(name: str, value: object) -> str:
    if value is None or value == [] or value == "":
        return "(unset)"
    if name in limits.LIMITS:
        if name in limits.SHARES:
            return f"{value:g}"
        if name.endswith("_bytes") or name.endswith("_bytes_per_second"):
            text = limits.human(value)
            return text + ("/s" if name.endswith("per_second") else "")
        return f"{value:g}"
    if isinstance(value, list):
        return ",".join(value) if len(",".join(value)) < 40 else f"{value[0]} … {value[-1]} ({len(value)})"
    return str(value)


def settings_reference() -> str:
    """Markdown table of every setting: variable, where the settings object holds it, default, what it does, what it
    accepts (docs/pages/settings.md)."""
    lines = ["| variable | in the settings | default | what it sets | accepted |", "|---|---|---|---|---|"]
    for name, setting in SETTINGS.items():
        default = _shown(name, setting.default)
        lines.append(f"| `{limits.variable(name)}` | `{path_of(name)}` | `{default}` | {setting.description} | "
                     f"{setting.read.accepted} |")
    return "\n".join(lines) + "\n"


def limits_reference() -> str:
    """Markdown table of every limit: variable, default, what it bounds (README's limits table)."""
    lines = ["| limit | default | bounds |", "|---|---|---|"]
    for name, (default, what) in limits.LIMITS.items():
        lines.append(f"| `{limits.variable(name)}` | `{_shown(name, default)}` | {what} |")
    return "\n".join(lines) + "\n"
