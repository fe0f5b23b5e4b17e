"""The fix a refresh summary names for a source it could not reach: per suite, that suite's own flag and
setting, each a real option of `refresh` and a real setting."""

from __future__ import annotations

import re

import pytest

from pipelines.cli import build_parser
from pipelines.lib.io.limits import ENV_PREFIX
from pipelines.lib.mlperf.suites import SUITES
from pipelines.lib.warehouse.summary import TABLE_WIDTH, RefreshSummary, StepOutcome
from pipelines.settings import SETTINGS


def _is_refresh_option(flag: str) -> bool:
    value = "file:///data/x_{version}.tar.gz" if flag.endswith("-url-template") else "training"  # a valid value
    try:
        build_parser().parse_args(["refresh", flag, value])
    except SystemExit:
        return False
    return True


def _unreachable(name: str, suite: str | None = None) -> StepOutcome:
    return StepOutcome(name, False, 0.1, "connection refused, not retried", unreachable=True, suite=suite)


@pytest.mark.parametrize("suite", list(SUITES.values()), ids=list(SUITES))
def test_an_unreachable_suite_is_told_its_own_flag_and_setting(suite):
    lines = RefreshSummary([_unreachable(f"results {suite.round_label('v9.9')}", suite.name)]).render().splitlines()
    first_fix = next(i for i, line in enumerate(lines) if line.startswith("fix: "))
    fixes = " ".join(line.strip() for line in lines[first_fix:])  # the fix and its wrapped continuation lines
    flags = set(re.findall(r"--[a-z-]+", fixes))
    variables = set(re.findall(rf"{ENV_PREFIX}[A-Z_]+", fixes))
    assert all(map(_is_refresh_option, flags)) and suite.results_flag in flags, fixes
    assert variables == {suite.results_variable} == {f"{ENV_PREFIX}{suite.results_setting.upper()}"}, fixes
    assert suite.results_setting in SETTINGS
    assert f"file:///data/{suite.repository}_{{version}}.tar.gz" in fixes
    assert max(map(len, lines)) <= TABLE_WIDTH


def test_each_kind_of_source_is_named_once_and_reachable_failures_get_no_fix():
    steps = [_unreachable("results v4.1", "training"), _unreachable("results v5.0", "training"),
             _unreachable("results HPC v3.0", "hpc"), _unreachable("prices azure"),
             StepOutcome("results v5.1", False, 0.1, "HTTP 404 Not Found (not retried)", suite="training")]
    fixes = [line for line in RefreshSummary(steps).render().splitlines() if line.startswith("fix: ")]
    assert len(fixes) == 3, fixes  # Training once, HPC once, the price lists once
    assert "--no-prices" in fixes[-1]
    assert [line for line in RefreshSummary(steps[-1:]).render().splitlines() if line.startswith("fix: ")] == []
