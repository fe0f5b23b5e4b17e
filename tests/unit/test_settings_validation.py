"""Every setting and every numeric flag is checked when it is read: a finite number in its range, whole where it
counts, a URL template with its placeholder in the URL's path; the refusal names the variable (or flag) and what
it accepts, and the command stops at start."""

from __future__ import annotations

import pytest

from pipelines import cli
from pipelines.lib.io import limits
from pipelines.lib.io.context import amend
from pipelines.lib.mlperf.suites import TRAINING
from pipelines.settings import SETTINGS, URLS, load_settings


def _hostile_values(name: str) -> list[str]:
    low, high, whole = limits.accepted(name)
    values = ["inf", "-inf", "nan", "1e400", "-1", "abc", "", " "] + ([] if name in limits.SHARES else ["0"])
    values += [repr(high * 2), repr(-high)]
    if whole:
        values += ["0.5", repr(low + 0.5)]
    return [v for v in values if v.strip()]  # an empty variable is unset (the default)


@pytest.mark.parametrize("name", sorted(limits.LIMITS))
def test_every_limit_refuses_what_it_cannot_bound_naming_its_variable_and_range(monkeypatch, name):
    variable, accepted = limits.variable(name), limits.describe(name)
    for value in _hostile_values(name):
        monkeypatch.setenv(variable, value)
        with pytest.raises(ValueError) as refused:
            load_settings()
        message = str(refused.value)
        assert variable in message and accepted in message and repr(value) in message, (value, message)
    low, high, whole = limits.accepted(name)
    for value in (high, low if low > 0 else high / 2):  # the ends of the range are accepted
        monkeypatch.setenv(variable, repr(value))
        assert getattr(load_settings().limits, name) == value


def test_a_count_is_whole_and_a_limit_installed_by_a_worker_is_checked_too():
    with pytest.raises(ValueError, match="MLPERF_MAX_PARSE_WORKERS must be a whole number from 1 to 1,024, not 0.5"):
        amend(limits={"max_parse_workers": 0.5})
    with pytest.raises(ValueError, match="MLPERF_QUERY_TIMEOUT_SECONDS must be a number of seconds above 0"):
        amend(limits={"query_timeout_seconds": float("inf")})
    amend(limits={"max_parse_workers": 2.0, "query_timeout_seconds": 0.25})
    assert limits.limit("max_parse_workers") == 2


@pytest.mark.parametrize("variable, value, says", [
    ("MLPERF_PUE", "inf", "MLPERF_PUE: 'inf' is not a number at least 1 and at most 5"),
    ("MLPERF_PUE", "1e400", "MLPERF_PUE: '1e400' is not a number at least 1 and at most 5"),
    ("MLPERF_ELECTRICITY_USD_PER_KWH", "1e400", "greater than 0 and at most 10"),
    ("MLPERF_ELECTRICITY_USD_PER_KWH", "-inf", "greater than 0 and at most 10"),
    ("MLPERF_RESULTS_URL_TEMPLATE", "file:///etc/passwd?{version}", "{version} in its path (not its query or fragment)"),
    ("MLPERF_RESULTS_URL_TEMPLATE", "https://mirror.example/archive#{version}", "{version} in its path"),
    ("MLPERF_HPC_RESULTS_URL_TEMPLATE", "https://mirror.example/get?round={version}", "{version} in its path"),
    ("MLPERF_INFERENCE_RESULTS_URL_TEMPLATE", "https://mirror.example/static.tar.gz", "must contain {version}"),
    ("MLPERF_RULES_URL_TEMPLATE", "file:///etc/passwd?ref={ref}", "{ref} in its path"),
    ("MLPERF_RESULTS_URL_TEMPLATE", "ftp://mirror.example/{version}.tar.gz", "http(s), file:// or a path"),
    ("MLPERF_RESULTS_URL_TEMPLATE", "file://other.host/{version}.tar.gz", "on another host"),
    ("MLPERF_RESULTS_URL_TEMPLATE", "https:///{version}.tar.gz", "names no host"),
    ("MLPERF_RESULTS_URL_TEMPLATE", "https://mirror.example:port/{version}", "not a URL"),
    ("MLPERF_AZURE_PRICES_URL", "gopher://prices.example", "http(s), file:// or a path"),
    ("MLPERF_GITHUB_API_URL", "https://", "names no host"),
])
def test_a_bad_number_or_url_is_refused_naming_its_variable(monkeypatch, variable, value, says):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError) as refused:
        load_settings()
    assert variable in str(refused.value) and says in str(refused.value)


def test_a_url_template_with_its_placeholder_in_the_path_is_accepted(monkeypatch):
    for value in ("https://u:p%40ss@mirror.example/training_results_{version}.tar.gz", "/data/mirror/t_{version}.tgz",
                  "/data/odd?name#{version}.tgz", "file:///data/t_{version}.tgz", "file://localhost/d/{version}"):
        monkeypatch.setenv("MLPERF_RESULTS_URL_TEMPLATE", value)
        assert load_settings().sources.suite(TRAINING).results_url_template == value
    assert "results_url_template" in URLS and "github_api_url" in URLS


def test_a_password_in_a_refused_url_is_not_shown(monkeypatch):
    monkeypatch.setenv("MLPERF_RULES_URL_TEMPLATE", "https://user:S3cretPassw0rd@mirror.example/logging.tgz?{ref}")
    with pytest.raises(ValueError) as refused:
        load_settings()
    assert "S3cretPassw0rd" not in str(refused.value) and "https://REDACTED@mirror.example" in str(refused.value)


def test_every_setting_says_what_it_accepts():
    assert all(getattr(setting.read, "accepted", "") for setting in SETTINGS.values())


@pytest.mark.parametrize("variable, value", [
    ("MLPERF_QUERY_TIMEOUT_SECONDS", "nan"), ("MLPERF_MAX_PARSE_WORKERS", "0.5"), ("MLPERF_MAX_LINE_BYTES", "1e400"),
    ("MLPERF_RESULTS_URL_TEMPLATE", "file:///etc/passwd?{version}"),
])
def test_a_command_stops_at_start_with_one_line_naming_the_setting(monkeypatch, capsys, tmp_path, variable, value):
    monkeypatch.setenv(variable, value)
    assert cli.main(["status", "--warehouse-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: invalid setting: {variable}") and repr(value) in err


@pytest.mark.parametrize("args, flag, says", [
    (["query", "select 1", "--timeout", "nan"], "--timeout", "a number of seconds above 0 and at most 10,000,000"),
    (["query", "select 1", "--timeout", "-1"], "--timeout", "above 0"),
    (["query", "select 1", "--timeout", "1e400"], "--timeout", "above 0"),
    (["query", "select 1", "--timeout", "abc"], "--timeout", "above 0"),
    (["query", "select 1", "--memory-limit", "abc"], "--memory-limit", "a whole number of bytes from 16 MiB"),
    (["query", "select 1", "--memory-limit", "inf"], "--memory-limit", "a whole number of bytes from 16 MiB"),
    (["query", "select 1", "--memory-limit", "1000"], "--memory-limit", "a whole number of bytes from 16 MiB"),
    (["query", "select 1", "--limit", "-5"], "--limit", "a whole number from 0"),
    (["refresh", "--results-url-template", "file:///etc/passwd?{version}"], "--results-url-template",
     "{version} in its path"),
    (["refresh", "--rules-url-template", "https://mirror.example/logging.tgz"], "--rules-url-template",
     "must contain {ref}"),
])
def test_a_bad_flag_is_a_usage_error_naming_the_flag_and_its_range(capsys, args, flag, says):
    with pytest.raises(SystemExit) as stopped:
        cli.main(args)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: " in err and says in err, err
