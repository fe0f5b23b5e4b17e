"""Rules archives are untrusted input: nothing in them runs, their content is pinned, their size is
bounded, and scoring ends at its deadline. Each case through a real refresh over HTTP on 127.0.0.1."""

from __future__ import annotations

import io
import os
import re
import tarfile
import time
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.mlperf.rules import package_ruleset, ref_for_round
from pipelines.runner.jobs import refresh
from support.http_server import LoopbackServer
from support.logs import (
    make_archive,
    make_rules_archive,
    package_rules_archive,
    package_rules_digest,
    write_ssd_archive,
)
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow]

ROUND = "v4.1"
REF = ref_for_round(ROUND).ref
CHECKER = ("has_been_exec = set([])  exec(begin_blocks[0]['BEGIN']['CODE'].strip(), state, locals())")


def _hostile(common_edit) -> bytes:
    """The package's rules with training_4.1.0/common.yaml edited."""
    files = dict(package_ruleset(ROUND).files)
    files["training_4.1.0/common.yaml"] = common_edit(files["training_4.1.0/common.yaml"])
    return make_rules_archive(files, CHECKER, top=f"logging-{REF}")


def _site(tmp_path: Path, rules: bytes) -> Path:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    write_ssd_archive(site / f"training_results_{ROUND}-main.tar.gz", systems=2)
    (site / f"logging-{REF}.tar.gz").write_bytes(rules)
    return site


def _refresh(site: Path, trusted=(REF,)):
    with LoopbackServer(site) as server:
        return refresh(refresh_settings(rounds=[ROUND],
                                        results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                        rules_url_template=f"{server.url}/logging-{{ref}}.tar.gz",
                                        trust_rules_refs=list(trusted)),
                       prices=False, backoff_seconds=0.01)


def _results_step(summary) -> str:
    (step,) = [s for s in summary.steps if s.name == f"results {ROUND}"]
    assert not step.ok
    return step.detail


@pytest.mark.parametrize("edit,named", [
    # a CHECK that writes a file (and would hold a secret)
    (lambda t: t.replace("NAME:  submission_org", "NAME:  submission_org\n    POST: \" open('{marker}', 'w')"
                         ".write('key') \"", 1), r"(name open|attribute \.write) is not part of the rule language"),
    # a BEGIN block that runs a shell command
    (lambda t: t.replace("s.update({", "__import__('os').system('touch {marker}'); s.update({", 1),
     "is not part of the rule language"),
    # a CHECK that sleeps for ten minutes
    (lambda t: t.replace("NAME:  submission_org", "NAME:  submission_org\n    PRE: \" __import__('time').sleep(600)"
                         " or True \"", 1), r"(name __import__|attribute \.sleep) is not part of the rule language"),
])
def test_downloaded_rule_code_never_runs(tmp_path, warehouse, edit, named):
    marker = tmp_path / "ran"
    rules = _hostile(lambda text: edit(text).replace("{marker}", str(marker)))
    started = time.perf_counter()
    summary = _refresh(_site(tmp_path, rules))  # even a ref the user trusts runs nothing
    assert time.perf_counter() - started < 60
    detail = _results_step(summary)
    assert re.search(named, detail) and "training_4.1.0/common.yaml" in detail and "the ruleset is not used" in detail
    assert not marker.exists()
    assert not summary.published and "Error" not in detail.split(":")[0]  # a sentence, not a class name


@pytest.mark.pinned_rules_only
def test_a_rules_archive_that_is_not_the_pinned_content_is_refused_unless_trusted(tmp_path, warehouse):
    site = _site(tmp_path, package_rules_archive(ROUND)[1])  # real rule files, but not 4.1.0-rc4's
    detail = _results_step(_refresh(site, trusted=()))
    assert detail == (f"rules {REF}: content {package_rules_digest(REF)[:16]} is not the pinned 2d8b202c49b07937: "
                      f"refused; --trust-rules-ref {REF} uses it")
    trusted = _refresh(site, trusted=(REF,))
    assert trusted.ok and trusted.published, trusted.render()


@pytest.mark.pinned_rules_only
def test_a_ref_the_table_does_not_list_is_trusted_on_first_use_and_pinned_from_then_on(warehouse):
    from pipelines.lib.mlperf.rules import RulesError, RuleSet, check_pinned
    from pipelines.lib.mlperf.rules_releases import pinned_on_first_use

    def ruleset(digest: str) -> RuleSet:
        return RuleSet("some-fork-ref", "training_5.1.0", (), package_ruleset("v5.1").semantics, digest)

    assert check_pinned(ruleset("ab" * 32), used_for="v9.9", base=warehouse).endswith("pinned on first use now")
    assert pinned_on_first_use(warehouse)["some-fork-ref"]["sha256"] == "ab" * 32
    assert "pinned on first use 20" in check_pinned(ruleset("ab" * 32), used_for="v9.9", base=warehouse)
    with pytest.raises(RulesError, match=r"rules some-fork-ref: content cdcdcdcdcdcdcdcd is not the content pinned on "
                                         r"first use abababababababab .*--trust-rules-ref some-fork-ref re-pins it"):
        check_pinned(ruleset("cd" * 32), used_for="v9.9", base=warehouse)
    assert "re-pinned: was abababababab" in check_pinned(ruleset("cd" * 32), frozenset({"some-fork-ref"}),
                                                         used_for="v9.9", base=warehouse)
    assert pinned_on_first_use(warehouse)["some-fork-ref"]["sha256"] == "cd" * 32


def test_a_rules_archive_that_inflates_past_its_bound_is_refused_fast(tmp_path, warehouse, monkeypatch,
                                                                      settings_from_env):
    """A small download with a huge member outside the checker folder: the whole stream is bounded."""
    monkeypatch.setenv("MLPERF_MAX_RULES_ARCHIVE_TOTAL_BYTES", str(16 << 20))
    settings_from_env(warehouse_dir=warehouse)
    zeros = tmp_path / "zeros.bin"
    with open(zeros, "wb") as fh:
        fh.truncate(256 << 20)  # 256 MiB of zeros: a few hundred KB compressed
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=1) as tar:
        tar.add(zeros, arcname=f"logging-{REF}/README.bin")
        with tarfile.open(fileobj=io.BytesIO(package_rules_archive(ROUND)[1]), mode="r:gz") as rules:
            for info in rules:
                tar.addfile(info, rules.extractfile(info) if info.isfile() else None)
    assert len(raw.getvalue()) < 2 << 20
    started = time.perf_counter()
    detail = _results_step(_refresh(_site(tmp_path, raw.getvalue())))
    assert time.perf_counter() - started < 30
    assert "inflates past 16,777,216 bytes" in detail and "MLPERF_MAX_RULES_ARCHIVE_TOTAL_BYTES" in detail


def test_a_round_past_its_scoring_deadline_ends_its_workers_and_says_so_in_one_line(tmp_path, warehouse, monkeypatch,
                                                                                  settings_from_env):
    """Rules in the language, but slow: nested loops over every log line in a BEGIN block, each step a scan of
    the log (slow enough that the round's deadline, not the loop budget, stops it on any machine). The
    deadline ends the worker processes; the round is refused in one line and nothing is left running."""
    from pipelines.lib.mlperf.rejections import ScoringDeadline
    from pipelines.lib.mlperf.round_parser import parse_round
    from pipelines.lib.mlperf.stage import round_rules, rules_archive_path

    slow = _hostile(lambda t: t.replace(
        "s.update({", "for a in loglines:\n            for b in loglines:\n                s['slow'] = b in loglines\n"
        "        s.update({", 1).replace("- BEGIN:\n    CODE: >\n", "- BEGIN:\n    CODE: |\n", 1))
    path = rules_archive_path(REF, warehouse)
    path.parent.mkdir(parents=True)
    path.write_bytes(slow)
    rules = round_rules(ROUND, warehouse, frozenset({REF}))
    members = {f"Acme/results/box/ssd/result_{i}.txt": _long_log() for i in range(8)}
    members["Acme/padding.bin"] = os.urandom(5 << 20)  # over 4 MiB: scored by worker processes
    archive = tmp_path / "big.tar.gz"
    archive.write_bytes(make_archive(members))
    monkeypatch.setenv("MLPERF_SCORING_DEADLINE_SECONDS", "3")
    settings_from_env(warehouse_dir=warehouse)
    started = time.perf_counter()
    with pytest.raises(ScoringDeadline) as caught:
        parse_round(archive, ROUND, rules, workers=2)
    assert time.perf_counter() - started < 30
    message = str(caught.value)
    assert "\n" not in message and message == (
        "v4.1: parsing and scoring did not finish within 3 s (MLPERF_SCORING_DEADLINE_SECONDS): its worker "
        "processes were ended; the round keeps its previous data")
    import multiprocessing

    # killed at once; on a loaded machine the fork server may take a moment to report their exit
    give_up = time.monotonic() + 10
    while (alive := [p for p in multiprocessing.active_children() if p.is_alive() and "Process" in p.name]) \
            and time.monotonic() < give_up:
        time.sleep(0.1)
    assert not alive, alive


def _long_log() -> bytes:
    from support.logs import open_ssd_run

    lines = open_ssd_run(10**6, 10, blocks=4)
    filler = [line for line in lines if "block_start" in line][:1] * 3000
    return "\n".join(lines[:5] + filler + lines[5:]).encode()


def test_existing_scores_stay_when_new_rules_are_refused(tmp_path, warehouse):
    from support.logs import package_rules_archive as good

    site = _site(tmp_path, good(ROUND)[1])
    assert _refresh(site).published
    before = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True).execute(
        "select count(score_minutes) from fct_training_result").fetchone()[0]
    (site / f"logging-{REF}.tar.gz").write_bytes(_hostile(lambda t: t.replace("s.update({", "exec('1'); s.update({", 1)))
    write_ssd_archive(site / f"training_results_{ROUND}-main.tar.gz", systems=3)  # new results as well
    summary = _refresh(site)
    assert "name exec is not part of the rule language" in _results_step(summary)
    after = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True).execute(
        "select count(score_minutes) from fct_training_result").fetchone()[0]
    assert after == before == 2
