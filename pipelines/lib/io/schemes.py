"""Which URL schemes a source may have: http(s) (a web URL, which names a host), file:// or a plain path."""

from __future__ import annotations

from urllib.parse import SplitResult

WEB_SCHEMES = ("http", "https")


def source_url_problem(parts: SplitResult) -> str | None:
    """Why the split URL cannot name a source (None when it can): a scheme other than http(s) or file (a
    one-letter one is a Windows drive, a path), or a web URL without a host."""
    scheme = parts.scheme.lower()
    if scheme not in (*WEB_SCHEMES, "file") and len(scheme) > 1:
        return f"must be http(s), file:// or a path, not {scheme}://"
    if scheme in WEB_SCHEMES and not parts.hostname:
        return "names no host"
    return None
