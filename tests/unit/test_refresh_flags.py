"""The refresh's flags make one settings object (`commands.refresh.with_flags`), and the refresh command names
no suite: it iterates the suite table."""

from __future__ import annotations

import argparse
import ast

from pipelines.commands.refresh import rounds_by_suite, with_flags
from pipelines.lib.mlperf.suites import SUITES
from pipelines.settings import load_settings
from support.paths import PROJECT_ROOT


def _args(**given) -> argparse.Namespace:
    flags = dict(rounds=None, suites=None, rules_url_template=None, trust_rules_ref=[], accept_shrink=False)
    flags |= {suite.results_setting: None for suite in SUITES.values()}
    return argparse.Namespace(**(flags | given))


def test_the_refresh_flags_become_one_settings_object(monkeypatch):
    monkeypatch.setenv("MLPERF_TRUST_RULES_REFS", "from-env")
    settings = load_settings()
    args = _args(rounds="v3.0", suites="hpc", hpc_results_url_template="/mirror/hpc_{version}.tgz",
                 rules_url_template="/mirror/logging-{ref}.tgz", trust_rules_ref=["flagged"], accept_shrink=True)
    flagged = with_flags(settings, args, rounds_by_suite(args, settings))
    sources = flagged.sources
    assert sources.suites == ["hpc"] and [(s.name, r) for s, r in sources.loaded() if r] == [("hpc", ["v3.0"])]
    assert sources.suite("hpc").results_url_template == "/mirror/hpc_{version}.tgz"
    assert sources.suite("training").results_url_template == settings.sources.suite("training").results_url_template
    assert sources.rules_url_template == "/mirror/logging-{ref}.tgz" and sources.accept_shrink is True
    assert sources.trust_rules_refs == ["flagged", "from-env"]
    unflagged = with_flags(settings, _args(), rounds_by_suite(_args(), settings))
    assert unflagged.sources.accept_shrink is False and unflagged.sources.trust_rules_refs == ["from-env"]


def test_a_round_no_suite_lists_goes_to_the_suite_that_takes_unlisted_rounds(monkeypatch):
    monkeypatch.setenv("MLPERF_HPC_ROUNDS", "v3.0")
    by_suite = rounds_by_suite(_args(rounds="v3.0,v9.9"), load_settings())
    taker = next(name for name, suite in SUITES.items() if suite.takes_unlisted_rounds)
    assert by_suite["hpc"] == ["v3.0"] and by_suite[taker] == ["v3.0", "v9.9"]  # Training lists v3.0 too
    monkeypatch.setenv("MLPERF_ROUNDS", "v4.1")
    assert rounds_by_suite(_args(rounds="v3.0,v9.9"), load_settings())[taker] == ["v9.9"]


def test_the_refresh_command_names_no_suite():
    tree = ast.parse((PROJECT_ROOT / "pipelines" / "commands" / "refresh.py").read_text(encoding="utf-8"))
    named = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in SUITES]
    assert named == []
