"""The hosts, besides each configured URL's own, whose links found in upstream responses may be followed
(`MLPERF_ALLOWED_HOSTS`, for mirrors): installed once per process by the settings layer, read by
urls.check_followed_url. Apart from it (and http.py), so that a command that fetches nothing (`query`, `status`)
does not import the HTTP client to apply its settings."""

from __future__ import annotations

_configured: frozenset[str] = frozenset()


def configure_allowed_hosts(hosts: list[str] | tuple[str, ...] | frozenset[str]) -> None:
    """Install this process's allowed hosts (lower case; blank entries dropped)."""
    global _configured
    _configured = frozenset(h.strip().lower() for h in hosts if h.strip())


def allowed_hosts() -> frozenset[str]:
    return _configured
