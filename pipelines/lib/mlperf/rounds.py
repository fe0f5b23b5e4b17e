"""MLPerf Training rounds: their names, their order and where their archives come from. Adding a round
is configuration (the `rounds` setting) or the discovery sensor adding a partition."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

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
    """A URL template (`template`, else the default): http(s), file:// or a path, with its placeholder in the
    path (in a query or a fragment, `file:///etc/passwd?{version}` would fetch the same file for every round:
    a file:// URL is read from its path alone). The password of a URL with credentials is registered as a
    secret here, where every template a process uses passes (settings, flags, resources): the download uses
    it, nothing shows or stores it."""
    from pipelines.lib.io.redaction import redact_url, register_url_credentials
    from pipelines.lib.io.schemes import source_url_problem

    template = template or default
    register_url_credentials(template)
    try:
        parts = urlsplit(template)
        parts.port  # noqa: B018  - a port that is no number raises here, not at the first download
    except ValueError as exc:
        raise ValueError(f"the {what} URL template is not a URL ({exc}): {redact_url(template)!r}") from None
    problem = source_url_problem(parts)
    if problem:
        raise ValueError(f"the {what} URL template {problem}: {redact_url(template)!r}")
    scheme = parts.scheme.lower()
    if scheme == "file" and parts.netloc not in ("", "localhost"):
        raise ValueError(f"the {what} URL template is a file:// URL on another host ({parts.netloc}), which "
                         f"is not supported: {redact_url(template)!r}")
    path = parts.path if scheme else template  # a plain path is a path whole, `?` and `#` included
    if placeholder not in path:
        where = "" if placeholder not in template else " in its path (not its query or fragment)"
        raise ValueError(f"the {what} URL template must contain {placeholder}{where}: {redact_url(template)!r}")
    return template


def results_url_template(template: str | None = None) -> str:
    """The archive URL template, checked (else GitHub's). Without `{version}` every round would fetch the
    same archive and be scored as another round."""
    return url_template(template, DEFAULT_RESULTS_URL_TEMPLATE, "{version}", "results")


def archive_url(template: str, round_version: str) -> str:
    """`{version}` is the round as in the repository name: `v4.1`."""
    return results_url_template(template).replace("{version}", round_version)
