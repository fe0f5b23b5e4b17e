"""Keep configured secrets out of every message, state file, metadata value and log line.

The secrets are the values registered with `register_secret`: the settings layer registers every secret
setting (`MLPERF_GCP_API_KEY`, `MLPERF_GITHUB_TOKEN`) and the credentials of every configured URL
(`https://user:password@mirror/...`) when it loads, resources a key given as a field. `redact` replaces each
one, plain or URL-encoded, with `[REDACTED]`, and the user information of any URL (`scheme://user:password@`),
registered or not, so a URL with credentials is shown as `scheme://REDACTED@host/...` wherever it goes.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, quote_plus, unquote, urlsplit

MASK = "[REDACTED]"
# A URL's masked user information: still a valid URL (brackets would read as an IPv6 host), so a record that keeps
# it can be parsed as one; it authenticates nowhere.
USERINFO_MASK = "REDACTED"
MIN_SECRET_LENGTH = 6  # shorter values would mask ordinary words
_registered: set[str] = set()
# The user information of a URL: after `://`, up to the `@` before the host (no `/`, `?`, `#` between). Anchored
# on the literal `://` (not the scheme's letters): a 100 MB response body is scanned in a fraction of a second.
_USERINFO = re.compile(r"(://)([^\s/?#@\"'<>\\]+)@")
_USERINFO_BYTES = re.compile(_USERINFO.pattern.encode())


def register_secret(value: str | None) -> None:
    if value and len(value) >= MIN_SECRET_LENGTH:
        _registered.add(value)


def register_url_credentials(url: str | None) -> None:
    """Register the password of a URL with user information (or its user name, when it is a token given
    alone: `https://TOKEN@host`), as typed and decoded. The URL itself keeps them: a download uses them."""
    if not url or "@" not in url:
        return
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:  # not a URL (a port that is no number, ...): its user information is masked by redact
        return
    for value in ([password] if password else [username]) if (username or password) else []:
        register_secret(value)
        register_secret(unquote(value))


def configured_secrets() -> list[str]:
    values = _registered
    forms = set()
    for value in values:
        if len(value) >= MIN_SECRET_LENGTH:
            # as typed, URL-encoded, and escaped as in a JSON string (records and run storage are JSON)
            forms.update({value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]})
    return sorted(forms, key=len, reverse=True)  # longest first: an encoded form may contain the plain one


def redact(text: object) -> str:
    text = str(text)
    for secret in configured_secrets():
        if secret in text:
            text = text.replace(secret, MASK)
    if "@" in text:
        text = _USERINFO.sub(lambda m: m.group(1) + USERINFO_MASK + "@", text)
    return text


def redact_url(url: str) -> str:
    """A URL as it may be shown or stored: its user information masked (`https://REDACTED@host/...`)."""
    return redact(url)


def redact_bytes(body: bytes) -> bytes:
    """`redact` for a response body (an upstream echoing a key must not get it stored)."""
    for secret in configured_secrets():
        token = secret.encode("utf-8", "replace")
        if token in body:
            body = body.replace(token, MASK.encode())
    if b"@" in body:
        body = _USERINFO_BYTES.sub(lambda m: m.group(1) + USERINFO_MASK.encode() + b"@", body)
    return body
