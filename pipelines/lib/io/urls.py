"""What a source URL names, and whether a link found upstream may be followed.

`local_source` tells a local mirror (file:// URL or plain path) from http(s); `check_followed_url`
allows a link only on the configured host or an allowed mirror host (`hosts.allowed_hosts`), or,
for a local source, only a relative link that stays inside its directory.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from pipelines.lib.io.hosts import allowed_hosts
from pipelines.lib.io.retry import FetchError, UnsafeURL
from pipelines.lib.io.schemes import WEB_SCHEMES


def local_source(url: str) -> Path | None:
    """The local path for file:// URLs and plain paths; None for http(s)."""
    parts = urlsplit(url)
    if parts.scheme in WEB_SCHEMES:
        return None
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise FetchError(f"{url}: remote file:// hosts are not supported")
        return Path(url2pathname(parts.path))
    if len(parts.scheme) <= 1:  # no scheme, or a Windows drive letter
        return Path(url)
    raise FetchError(f"{url}: unsupported URL scheme {parts.scheme!r}")


def check_followed_url(link: str, base_url: str, what: str) -> str:
    """`link` (found in an upstream response), resolved against `base_url`, if it may be followed.

    Allowed: http(s) on the base URL's host or a host in `MLPERF_ALLOWED_HOSTS` (comma-separated,
    for mirrors). A base that is itself local (file:// or a path) allows only relative links
    that stay inside its directory. Anything else (file://, other schemes, other hosts) raises UnsafeURL.
    """
    from urllib.parse import urljoin

    link = str(link).strip()
    base_parts = urlsplit(base_url)
    if base_parts.scheme not in WEB_SCHEMES:
        link_parts = urlsplit(link)
        if link_parts.scheme or link_parts.netloc or link.startswith("/"):
            raise UnsafeURL(f"{what}: refusing {link!r}: the source is local, only relative links are followed")
        base_dir = (Path(url2pathname(base_parts.path)) if base_parts.scheme == "file" else Path(base_url))
        base_dir = base_dir.resolve() if base_dir.is_dir() else base_dir.resolve().parent
        target = (base_dir / url2pathname(link_parts.path)).resolve()
        if base_dir not in target.parents:
            raise UnsafeURL(f"{what}: refusing {link!r}: it leaves {base_dir}")
        return str(target)
    resolved = urljoin(base_url, link)
    parts = urlsplit(resolved)
    allowed = {(base_parts.hostname or "").lower()} | allowed_hosts()
    if parts.scheme not in WEB_SCHEMES:
        raise UnsafeURL(f"{what}: refusing {resolved!r}: only http(s) links are followed")
    if (parts.hostname or "").lower() not in allowed:
        raise UnsafeURL(f"{what}: refusing {resolved!r}: host {parts.hostname!r} is not the configured host "
                        f"{base_parts.hostname!r} (add it to MLPERF_ALLOWED_HOSTS to allow a mirror)")
    return resolved
