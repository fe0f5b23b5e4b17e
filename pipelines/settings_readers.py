"""How a setting's value is read from its variable's text (or a flag's value): each reader returns the value or
raises ValueError saying why it is not one, and says what it accepts (`accepted`, for the settings page). The
settings table (`pipelines/settings.py`) names one reader per setting."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from pipelines.lib.io import limits
from pipelines.lib.mlperf.rounds import normalize_round


class Secret:
    """A secret setting's value: `get_secret_value()` gives it; repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# Readers: a setting's value from its variable's text (or a flag's value); ValueError says why it is not one.
def text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"not text: {value!r}")
    return value


def path(value: object) -> Path:
    if not isinstance(value, (str, Path)):
        raise ValueError(f"not a path: {value!r}")
    return Path(value)


def comma_list(value: object) -> list[str]:
    """`a,b,c` in the environment (not JSON), or a list given by a flag."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ValueError(f"not a comma-separated list: {value!r}")


def rounds(value: object) -> list[str]:
    return [normalize_round(r) for r in comma_list(value)]


def suites(value: object) -> list[str]:
    from pipelines.lib.mlperf.suites import suite_named

    return [suite_named(s).name for s in comma_list(value)]


_TRUE, _FALSE = {"1", "true", "t", "yes", "y", "on"}, {"0", "false", "f", "no", "n", "off"}


def flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"not true or false: {value!r}")


def _float(value: object) -> float:
    """A finite number from a variable's text or a flag's value (`1e9`, `1_000_000`); NaN, ±inf and `1e400`
    (which reads as inf) are refused here, before any limit compares with them."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"not a number: {value!r}")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise ValueError(f"not a number: {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


def number(low: float | None = None, high: float | None = None, above: float | None = None) -> Callable:
    """A finite number, greater than `above`, at least `low` and at most `high` where given."""
    bounds = " and ".join([*([f"greater than {above:g}"] if above is not None else []),
                           *([f"at least {low:g}"] if low is not None else []),
                           *([f"at most {high:g}"] if high is not None else [])]) or "at all"

    def read(value: object) -> float:
        try:
            number = _float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number {bounds}") from None
        if (low is not None and number < low) or (high is not None and number > high) \
                or (above is not None and number <= above):
            raise ValueError(f"{value!r} is not a number {bounds}")
        return number
    read.accepted = f"a number {bounds}"
    return read


def limit(name: str) -> Callable:
    """A limit's value: a finite number in the limit's range, whole where it counts (`limits.accepted`)."""
    def read(value: object) -> float:
        try:
            number = _float(value)
        except ValueError:
            raise ValueError(f"{limits.variable(name)} must be {limits.describe(name)}, not {value!r}") from None
        return limits.check(name, number, given=value)
    read.accepted = limits.describe(name)
    return read


def url_template(placeholder: str, what: str) -> Callable:
    """A URL template: http(s), file:// or a path, its placeholder in the URL's path (`rounds.url_template`)."""
    from pipelines.lib.mlperf.rounds import url_template as checked_template

    def read(value: object) -> str:
        return checked_template(text(value), "", placeholder, what)
    read.accepted = f"http(s), file:// or a path, with `{placeholder}` in its path"
    return read


def url(value: object) -> str:
    """A base URL: http(s) with a host, file:// or a path (what the downloads read), nothing else."""
    from urllib.parse import urlsplit

    from pipelines.lib.io.redaction import redact_url
    from pipelines.lib.io.schemes import source_url_problem

    given = text(value)
    try:
        parts = urlsplit(given)
        parts.port  # noqa: B018  - a port that is no number raises here
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc}): {redact_url(given)!r}") from None
    problem = source_url_problem(parts)
    if problem:
        raise ValueError(f"{problem}: {redact_url(given)!r}")
    return given


def secret(value: object) -> Secret:
    return Secret(text(value))


def checked(check: Callable[[str], str], accepted: str, *, secret: bool = False) -> Callable:
    """Text checked by `check` (a `lib.warehouse.team` check: ValueError says why not), kept a Secret if `secret`."""
    def read(value: object) -> object:
        checked_text = check(text(value).strip())
        return Secret(checked_text) if secret else checked_text
    read.accepted, read.secret = accepted, secret
    return read


def team_checks():
    from pipelines.lib.warehouse import team

    return team


# What each reader accepts, for the settings page (readers made by a function above set their own).
text.accepted = "text"
path.accepted = "a folder"
comma_list.accepted = "a comma-separated list"
rounds.accepted = "comma-separated rounds, e.g. v4.1,5.0"
suites.accepted = "comma-separated: training, hpc, inference"
flag.accepted = "true or false (1, yes, on; 0, no, off)"
secret.accepted = "text, kept secret"
secret.secret = True
team = team_checks()
postgres_url = checked(team.check_postgres_url, "a postgresql:// URL with a host and a database, kept secret",
                       secret=True)
identifier = checked(team.check_identifier, "a lower-case PostgreSQL name (letters, digits, _)")
url.accepted = "http(s) with a host, file:// or a path"
