"""The credentials of any URL are masked wherever `redact` runs (records, output, run storage), registered or not;
JSON written for users holds no NaN or Infinity."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import pytest

from pipelines.lib.io.files import atomic_write_text
from pipelines.lib.io.jsonsafe import dumps_strict, finite
from pipelines.lib.io.redaction import redact, redact_bytes, register_url_credentials


@pytest.mark.parametrize("text, shown", [
    ("https://user:pa55word@mirror.example/x_{version}.tar.gz", "https://REDACTED@mirror.example/x_{version}.tar.gz"),
    ("fetch http://u:p%40ss@127.0.0.1:8080/a failed", "fetch http://REDACTED@127.0.0.1:8080/a failed"),
    ("https://ghp_tokenonly1234@github.com/o/r", "https://REDACTED@github.com/o/r"),
    ('{"url": "file://me:x@localhost/data"}', '{"url": "file://REDACTED@localhost/data"}'),
    ("two: https://a:b@h1/ and https://c:d@h2/", "two: https://REDACTED@h1/ and https://REDACTED@h2/"),
])
def test_the_user_information_of_any_url_is_masked(text, shown):
    assert redact(text) == shown
    assert redact_bytes(text.encode()) == shown.encode()
    assert redact(redact(text)) == shown  # masking twice changes nothing


@pytest.mark.parametrize("text", [
    "git@github.com:mlcommons/logging.git", "mail someone@example.com", "https://host/path@2x.png",
    "https://host/a?b=c@d", "https://host/#frag@x", "no url at all",
])
def test_text_without_url_credentials_is_left_as_it_is(text):
    assert redact(text) == text


def test_a_registered_url_password_is_masked_anywhere_in_any_form():
    register_url_credentials("https://reader:Zq9%23secret-41@mirror.example/{version}.tgz")
    for form in ("Zq9%23secret-41", "Zq9#secret-41"):
        assert redact(f"the server said: bad password {form}") == "the server said: bad password [REDACTED]"
    assert "Zq9" not in redact('{"detail": "Zq9#secret-41"}')


def test_records_are_written_without_credentials(tmp_path):
    record = tmp_path / "x.meta.json"
    atomic_write_text(record, json.dumps({"url": "https://user:hunter22@mirror.example/a.tgz"}))
    assert json.loads(record.read_text()) == {"url": "https://REDACTED@mirror.example/a.tgz"}


def test_strict_json_has_null_for_every_non_finite_number():
    value = {"a": math.nan, "b": [math.inf, 1.0, (-math.inf, Decimal("NaN"))], "c": {"d": Decimal("sNaN")},
             "e": Decimal("2.50"), "f": 3, "g": True, "h": None, "i": "NaN"}
    text = dumps_strict(value)
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in strict JSON")) == {
        "a": None, "b": [None, 1.0, [None, None]], "c": {"d": None}, "e": "2.50", "f": 3, "g": True, "h": None,
        "i": "NaN"}
    assert finite(1.5) == 1.5 and finite("x") == "x"


def test_a_user_name_alone_is_a_token_only_in_an_http_url():
    from pipelines.lib.io.redaction import url_credentials

    assert url_credentials("https://ghp_Token1234@mirror.example/{version}.tgz") == {"ghp_Token1234"}
    assert url_credentials("postgresql://postgres@127.0.0.1:5432/catalog") == set()
    assert url_credentials("postgresql://owner:pw-Secret-2@db/catalog") == {"pw-Secret-2"}
