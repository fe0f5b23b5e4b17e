"""MLPerf Training rounds: their names, their order and where their archives come from. Adding a round
is configuration (the `rounds` setting) or the discovery sensor adding a partition."""

from __future__ import annotations

import re

from pipelines.lib.reference.sources import DEFAULT_RESULTS_URL_TEMPLATE

ROUND_PATTERN = re.compile(r"^v\d+\.\d+$")


def normalize_round(text: str) -> str:
    text = text.strip()
    text = text if text.startswith("v") else f"v{text}"
    if not ROUND_PATTERN.match(text):
        raise ValueError(f"not an MLPerf round: {text!r} (expected like v4.1)")
    return text


def round_sort_key(round_version: str) -> tuple[int, int]:
    major, minor = round_version.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def url_template(template: str | None, default: str, placeholder: str, what: str) -> str:
    """A URL template (`template`, else the default); it must hold its placeholder, or every partition
    would fetch the same file."""
    template = template or default
    if placeholder not in template:
        raise ValueError(f"the {what} URL template must contain {placeholder}: {template!r}")
    return template


def results_url_template(template: str | None = None) -> str:
    """The archive URL template, checked (else GitHub's). Without `{version}` every round would fetch the
    same archive and be scored as another round."""
    return url_template(template, DEFAULT_RESULTS_URL_TEMPLATE, "{version}", "results")


def archive_url(template: str, round_version: str) -> str:
    """`{version}` is the round as in the repository name: `v4.1`."""
    return results_url_template(template).replace("{version}", round_version)
