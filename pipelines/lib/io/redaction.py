"""Keep configured secrets out of every message, state file, metadata value and log line.

The secrets are those of the active run context (`context.py`): the settings layer puts every secret setting
(`MLPERF_GCP_API_KEY`, `MLPERF_GITHUB_TOKEN`) and the credentials of every configured URL
(`https://user:password@mirror/...`) in it; code that meets another at run time (a key a resource was given, a URL
template given as a flag) adds it with `register_secret` / `register_url_credentials`. `redact` replaces each one,
plain or URL-encoded, with `[REDACTED]`, and the user information of any URL (`scheme://user:password@`),
registered or not, so a URL with credentials is shown as `scheme://REDACTED@host/...` wherever it goes.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, quote_plus, unquote, urlsplit

from pipelines.lib.io.context import add_secrets, current
from pipelines.lib.io.schemes import WEB_SCHEMES

MASK = "[REDACTED]"
# A URL's masked user information: still a valid URL (brackets would read as an IPv6 host), so a record that keeps
# it can be parsed as one; it authenticates nowhere.
USERINFO_MASK = "REDACTED"
MIN_SECRET_LENGTH = 6  # shorter values would mask ordinary words
# The user information of a URL: after `://`, up to the `@` before the host (no `/`, `?`, `#` between). Anchored
# on the literal `://` (not the scheme's letters): a 100 MB response body is scanned in a fraction of a second.
_USERINFO = re.compile(r"(://)([^\s/?#@\"'<>\\]+)@")
_USERINFO_BYTES = re.compile(_USERINFO.pattern.encode())


def register_secret(value: str | None) -> None:
    """Add a secret met at run time to the active context (see context.add_secrets)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        add_secrets([value])


def url_credentials(url: str | None) -> set[str]:
    """The password of a URL with user information (or, for http(s), its user name given alone: a token,
    `https://TOKEN@host`), as typed and decoded: the secrets of that URL. Another scheme's user name alone is a
    login (`postgresql://postgres@host`), no secret: masking it would mask every `postgresql://` too."""
    if not url or "@" not in url:
        return set()
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:  # not a URL (a port that is no number, ...): its user information is masked by redact
        return set()
    secret = password or (username if parts.scheme.lower() in WEB_SCHEMES else None)
    return {secret, unquote(secret)} if secret else set()


def register_url_credentials(url: str | None) -> None:
    """Add the secrets of a URL (`url_credentials`) to the active context. The URL itself keeps them: a download
    uses them."""
    add_secrets(value for value in url_credentials(url) if len(value) >= MIN_SECRET_LENGTH)


def configured_secrets() -> list[str]:
    """The active context's secrets in every form they may take in a text, longest first."""
    values = current().secrets
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
