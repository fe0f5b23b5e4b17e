"""Keep configured secrets out of every message, state file, metadata value and log line.

The secrets are the values registered with `register_secret`: the settings layer registers every secret
setting (`MLPERF_GCP_API_KEY`, `MLPERF_GITHUB_TOKEN`) when it loads, resources a key given as a field.
`redact` replaces each one, plain or URL-encoded, with `[REDACTED]`.
"""

from __future__ import annotations

from urllib.parse import quote, quote_plus

MASK = "[REDACTED]"
MIN_SECRET_LENGTH = 6  # shorter values would mask ordinary words
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    if value and len(value) >= MIN_SECRET_LENGTH:
        _registered.add(value)


def configured_secrets() -> list[str]:
    values = _registered
    forms = set()
    for value in values:
        if len(value) >= MIN_SECRET_LENGTH:
            forms.update({value, quote(value, safe=""), quote_plus(value)})
    return sorted(forms, key=len, reverse=True)  # longest first: an encoded form may contain the plain one


def redact(text: object) -> str:
    text = str(text)
    for secret in configured_secrets():
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_bytes(body: bytes) -> bytes:
    """`redact` for a response body (an upstream echoing a key must not get it stored)."""
    for secret in configured_secrets():
        token = secret.encode("utf-8", "replace")
        if token in body:
            body = body.replace(token, MASK.encode())
    return body
