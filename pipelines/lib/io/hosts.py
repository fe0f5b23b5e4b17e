"""The hosts, besides each configured URL's own, whose links found in upstream responses may be followed
(`MLPERF_ALLOWED_HOSTS`, for mirrors): the active run context's, read by urls.check_followed_url. Apart from it
(and http.py), so that a command that fetches nothing (`query`, `status`) does not import the HTTP client to
apply its settings."""

from __future__ import annotations

from pipelines.lib.io.context import current


def allowed_hosts() -> frozenset[str]:
    """Lower case, blank entries dropped (as the context keeps them)."""
    return current().allowed_hosts
