"""Scores as published: each round judged by its own rules release (fetched as data, with that
release's checker semantics) beside today's package; guards that keep a round from silently
vanishing or shrinking; one failing round never blocks another."""

from __future__ import annotations

import tarfile

import duckdb
import pytest

from pipelines.cli import main as cli_main
from pipelines.lib.mlperf import compliance
from pipelines.lib.mlperf.mllog import MLLOG, parse_log
from pipelines.lib.mlperf.rounds import archive_url, results_url_template
from pipelines.lib.mlperf.rules import (
    CheckerSemantics,
    RulesError,
    RuleSet,
    folder_for_round,
    package_ruleset,
    ref_for_round,
    ruleset_from_archive,
)
from pipelines.runner.jobs import refresh
from support.http_server import LoopbackServer
from support.logs import (
    make_archive,
    make_rules_archive,
    mllog,
    open_ssd_run,
    serve_package_rules,
    system_json,
)
from support.paths import SHARED_MLPERF
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow]

SHARED_RULES = SHARED_MLPERF / "logging"
needs_shared_rules = pytest.mark.skipif(
    not any(SHARED_RULES.glob("logging-*.tar.gz")),
    reason=f"shared mlcommons/logging archives not found at {SHARED_RULES} (../shared beside the checkout)",
)

# What a checker source must contain for each semantic difference (the real releases are checked below).
CHECKER_1_1 = "put_warning(' Warning: Failed weights initialization check (can be ignored for 1.1.0)')"
CHECKER_2_1 = "has_been_exec = set([])"

WEIGHTS_RULES = {
    "training_1.1.0/common.yaml": """
- BEGIN:
    CODE: " s.update({'initialized_tensors': []}) "
- KEY:
    NAME: weights_initialization
    REQ: AT_LEAST_ONE
    POST: " s['initialized_tensors'] += [v['metadata']['tensor']] "
- KEY:
    NAME: run_start
    REQ: EXACTLY_ONE
- END:
    CHECK: " sorted(s['initialized_tensors']) == sorted(['embeddings', 'encoder']) "
""",
}

SUBMISSION_RULES = {
    "training_2.1.0/common.yaml": """
- BEGIN:
    CODE: " s.update({'seen': 0}) "
- KEY:
    NAME: submission_benchmark
    REQ: EXACTLY_ONE
    POST: " s['seen'] += 1 "
- END:
    CHECK: " s['seen'] == 1 "
""",
}


def _ruleset(files, checker_source, folder):
    return RuleSet("test", folder, tuple(sorted(files.items())), CheckerSemantics.from_checker_source(checker_source))


def _lines(*lines):
    return parse_log("\n".join(lines).encode(), MLLOG).lines


def test_weights_initialization_failures_are_warnings_only_under_the_1_1_checker():
    no_weights = _lines(mllog("run_start", None, 1))
    wrong_weights = _lines(mllog("run_start", None, 1), mllog("weights_initialization", None, 2, tensor="embeddings"))
    era = _ruleset(WEIGHTS_RULES, CHECKER_1_1, "training_1.1.0")
    later = _ruleset(WEIGHTS_RULES, "", "training_1.1.0")
    assert era.semantics.weights_init_warnings and not later.semantics.weights_init_warnings
    for lines in (no_weights, wrong_weights):
        assert compliance.check_log(lines, 0, era).passed
        assert not compliance.check_log(lines, 0, later).passed
    assert any("'weights_initialization' but found 0" in m for m in compliance.check_log(no_weights, 0, later).messages)
    assert "initialized_tensors" in compliance.check_log(wrong_weights, 0, later).reason


def test_submission_keys_are_checked_once_from_the_2_1_checker_on():
    lines = _lines(mllog("submission_benchmark", "bert", 1), mllog("submission_benchmark", "bert", 2))
    assert compliance.check_log(lines, 0, _ruleset(SUBMISSION_RULES, CHECKER_2_1, "training_2.1.0")).passed
    older = compliance.check_log(lines, 0, _ruleset(SUBMISSION_RULES, "", "training_2.1.0"))
    assert not older.passed and "s['seen'] == 1" in older.reason


def test_rule_folders_and_refs_of_rounds():
    folders = {"0.6.0", "0.7.0", "0.7.0_warn", "training_1.0.0", "training_4.1.0", "hpc_1.0.0"}
    assert folder_for_round(folders, "v0.6") == "0.6.0"
    assert folder_for_round(folders, "v4.1") == "training_4.1.0"
    assert folder_for_round(folders, "v4.0") == "training_1.0.0"  # the newest older ruleset
    assert folder_for_round(folders, "v0.5") is None
    assert ref_for_round("v2.1").ref == "2.1.0" and ref_for_round("v2.1").listed
    assert ref_for_round("v0.5") is None  # no rules release predates v0.5
    # a round the reviewed table does not list is never scored with another round's ref silently: its own ref is
    # resolved (rules_releases.py) before it is staged
    with pytest.raises(RulesError, match="has not been resolved yet"):
        ref_for_round("v9.9")


def test_templates_must_name_their_placeholder(warehouse):
    with pytest.raises(ValueError, match=r"\{version\}"):
        results_url_template("https://mirror.example/training_results.tar.gz")
    with pytest.raises(ValueError, match=r"\{version\}"):
        archive_url("/data/latest.tar.gz", "v4.1")
    with pytest.raises(SystemExit) as refused:  # refused as the flag is read, naming it
        cli_main(["refresh", "--rounds", "v4.1", "--no-prices", "--results-url-template", "/data/latest.tar.gz"])
    assert refused.value.code == 2
    assert not (warehouse / "mlperf.duckdb").exists()


@needs_shared_rules
def test_checker_semantics_read_off_each_real_release():
    expected = {  # (submission keys once, BEGIN sees loglines, AT_LEAST(n), FIRST_CHECK, 1.1 warnings)
        "0.7.0-rc4": (False, False, False, False, False),
        "1.0.0": (False, False, False, False, False),
        "1.1.0-rc4": (False, False, False, False, True),
        "2.0.0-rc4": (False, False, False, False, False),
        "2.1.0": (True, False, False, False, False),
        "3.0.0-rc2": (True, False, False, False, False),
        "acd623ea71e78bb39763c67f4accf16c4cf20a3f": (True, True, True, False, False),
        "4.0.0-rc3-rcp-prunning": (True, True, True, False, False),
        "4.1.0-rc4": (True, True, True, False, False),
        "5.0.0-rc3": (True, True, True, False, False),
        "5.1.0-rc4": (True, True, True, False, False),
    }
    rounds = {ref_for_round(r).ref: r for r in ("v0.7", "v1.0", "v1.1", "v2.0", "v2.1", "v3.0", "v3.1", "v4.0",
                                              "v4.1", "v5.0", "v5.1")}
    for ref, flags in expected.items():
        ruleset = ruleset_from_archive(SHARED_RULES / f"logging-{ref}.tar.gz", ref, rounds[ref])
        s = ruleset.semantics
        assert (s.checks_submission_keys_once, s.begin_sees_loglines, s.at_least_n, s.first_check,
                s.weights_init_warnings) == flags, ref
        assert ruleset.folder.endswith(rounds[ref].lstrip("v") + ".0")
    v06 = ruleset_from_archive(SHARED_RULES / "logging-0.7.0-rc4.tar.gz", "0.7.0-rc4", "v0.6")
    assert v06.folder == "0.6.0" and v06.entry == "0.6.0/common.yaml"
    assert package_ruleset("v4.1").semantics.first_check


def _first_member(archive, suffix):
    with tarfile.open(archive, "r|gz") as tar:
        for info in tar:
            if info.isfile() and info.name.endswith(suffix):
                return tar.extractfile(info).read()
    raise AssertionError(f"no {suffix} in {archive}")


@needs_shared_rules
@pytest.mark.skipif(not (SHARED_MLPERF / "training_results_v2.1-main.tar.gz").exists(), reason="no shared v2.1 archive")
def test_a_real_v2_1_bert_log_passes_its_own_release_and_fails_today():
    data = _first_member(SHARED_MLPERF / "training_results_v2.1-main.tar.gz", "/bert/result_0.txt")
    lines = parse_log(data, MLLOG).lines
    era = ruleset_from_archive(SHARED_RULES / "logging-2.1.0.tar.gz", "2.1.0", "v2.1")
    assert compliance.check_log(lines, 0, era).passed
    today = compliance.check_log(lines, 0, package_ruleset("v2.1"))
    assert not today.passed and "opt_lamb_epsilon" in today.reason


LOOSE_RULES = {  # a release that only asks for a start and a successful stop
    "training_4.1.0/common.yaml": """
- KEY:
    NAME: run_start
    REQ: EXACTLY_ONE
- KEY:
    NAME: run_stop
    REQ: EXACTLY_ONE
    CHECK: " v['metadata']['status'] == 'success' "
""",
}


def _box_runs(system, minutes, drop=()):
    members = {f"Acme/systems/{system}.json": system_json()}
    for i, m in enumerate(minutes):
        lines = [line for line in open_ssd_run(10**6 * (i + 1), m) if not (i in drop and '"cache_clear"' in line)]
        members[f"Acme/results/{system}/ssd/result_{i}.txt"] = "\n".join(lines).encode()
    return members


def _serve(site, round_version, members, rules=None):
    (site / f"training_results_{round_version}-main.tar.gz").write_bytes(make_archive(members))
    if rules is None:
        serve_package_rules(site, round_version)
    else:
        (site / f"logging-{ref_for_round(round_version).ref}.tar.gz").write_bytes(rules)


def _refresh(server, rounds, **kw):
    """A refresh that trusts the hand-made rules archives these tests serve (as `--trust-rules-ref` does)."""
    trusted = tuple(ref.ref for ref in map(ref_for_round, rounds) if ref is not None)
    return refresh(refresh_settings(rounds=rounds,
                                    results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                    rules_url_template=f"{server.url}/logging-{{ref}}.tar.gz",
                                    trust_rules_refs=list(trusted), **kw),
                   prices=False, backoff_seconds=0.01)


def _db(warehouse):
    return duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True)


def test_published_and_current_scores_side_by_side(tmp_path, warehouse):
    site = tmp_path / "site"
    site.mkdir()
    checker = "has_been_exec = set([])  exec(begin_blocks[0]['BEGIN']['CODE'].strip(), state, locals())"
    # Runs 0 and 1 log no cache_clear: the loose release of the round accepts them, today's rules do not.
    _serve(site, "v4.1", _box_runs("box", [10, 20, 30, 40], drop={0, 1}),
           rules=make_rules_archive(LOOSE_RULES, checker, top="logging-4.1.0-rc4"))
    with LoopbackServer(site) as server:
        summary = _refresh(server, ["v4.1"])
    assert summary.ok and summary.published, summary.render()
    row = _db(warehouse).execute(
        "select score_minutes, score_minutes_current_rules, current_rules_drop_reason, ruleset_ref, runs_dropped, "
        "runs_dropped_current_rules from fct_training_result"
    ).fetchone()
    assert row[0] == 25.0  # olympic mean of 10..40 under the round's own rules
    assert row[1] is None and "cache_clear" in row[2]  # two drops are one too many today
    assert row[3] == "4.1.0-rc4" and row[4:] == (0, 2)
    runs = _db(warehouse).execute(
        "select count(*) filter (where scored), count(*) filter (where scored_current_rules), "
        "count(*) filter (where current_rules_drop_reason like '%cache_clear%') from fct_training_run"
    ).fetchone()
    assert runs == (4, 2, 2)
    assert "v4.1: 1 results, 1 scored as published; today's rules would reject 1" in summary.render()


def test_a_failing_round_keeps_its_data_and_the_others_publish(tmp_path, warehouse):
    site = tmp_path / "site"
    site.mkdir()
    with LoopbackServer(site) as server:
        _serve(site, "v4.1", _box_runs("box", [10, 20, 30]))
        _serve(site, "v5.0", _box_runs("box", [10, 20, 30]))
        assert _refresh(server, ["v4.1", "v5.0"]).published
        # v5.0 now yields no result logs (every member is a system file); v4.1 gains a system.
        _serve(site, "v5.0", {"Acme/systems/box.json": system_json()})
        _serve(site, "v4.1", _box_runs("box", [10, 20, 30]) | _box_runs("big", [5, 6, 7]))
        summary = _refresh(server, ["v4.1", "v5.0"])
    assert summary.published and not summary.ok
    failed = [s for s in summary.steps if not s.ok]
    assert [s.name for s in failed] == ["results v5.0"] and "no result logs" in failed[0].detail
    rows = dict(_db(warehouse).execute("select round, count(*) from fct_training_result group by 1").fetchall())
    assert rows == {"v4.1": 2, "v5.0": 1}  # v5.0 keeps its previous result


def test_a_sharply_shrinking_round_is_refused_unless_accepted(tmp_path, warehouse):
    site = tmp_path / "site"
    site.mkdir()
    many = {}
    for s in range(4):
        many |= _box_runs(f"box{s}", [10, 20, 30])
    with LoopbackServer(site) as server:
        _serve(site, "v4.1", many)
        assert _refresh(server, ["v4.1"]).published
        _serve(site, "v4.1", _box_runs("box0", [10, 20, 30]))
        refused = _refresh(server, ["v4.1"])
        assert not refused.ok and "fell from 4 to 1" in refused.render()
        assert _db(warehouse).execute("select count(*) from fct_training_result").fetchone() == (4,)
        accepted = _refresh(server, ["v4.1"], accept_shrink=True)
    assert accepted.ok and accepted.published, accepted.render()
    assert _db(warehouse).execute("select count(*) from fct_training_result").fetchone() == (1,)


def test_today_s_verdict_is_reused_only_when_the_same_rule_files_and_behaviour_decided():
    from pipelines.lib.mlperf.round_rules import RoundRules

    files = dict(SUBMISSION_RULES)
    later = files | {"training_6.1.0/common.yaml": "- KEY:\n    NAME: x\n    FIRST_CHECK: \" True \"\n"}
    rules = RoundRules(_ruleset(files, CHECKER_2_1, "training_2.1.0"),
                       _ruleset(later, CHECKER_2_1 + " FIRST_CHECK", "training_2.1.0"))
    decided = frozenset({"training_2.1.0/common.yaml"})
    # FIRST_CHECK only in a folder this log never reached: same files, same behaviour, same verdict
    assert rules.same_verdict(decided)
    edited = RoundRules(rules.published, _ruleset({k: v + "\n# edited" for k, v in files.items()}, CHECKER_2_1,
                                                  "training_2.1.0"))
    assert not edited.same_verdict(decided)  # the deciding file differs
    older = RoundRules(rules.published, _ruleset(files, "", "training_2.1.0"))
    assert not older.same_verdict(decided)  # its checker runs submission keys' checks on every line
    assert RoundRules(None, None).same_verdict(frozenset())


def test_an_archive_whose_every_result_log_is_refused_keeps_the_round_s_data(tmp_path, warehouse, monkeypatch):
    """A hostile archive (every result log over the member limit) must not publish the round empty."""
    site = tmp_path / "site"
    site.mkdir()
    with LoopbackServer(site) as server:
        _serve(site, "v4.1", _box_runs("box", [10, 20, 30]))
        assert _refresh(server, ["v4.1"]).published
        monkeypatch.setenv("MLPERF_MAX_MEMBER_BYTES", "64")  # every log is larger: all refused
        _serve(site, "v4.1", _box_runs("box", [10, 20, 30]) | _box_runs("big", [5, 6, 7]))
        summary = _refresh(server, ["v4.1"])
    failed = [s for s in summary.steps if not s.ok]
    assert [s.name for s in failed] == ["results v4.1"] and "no result logs" in failed[0].detail, summary.render()
    assert _db(warehouse).execute("select count(*), sum(runs_total) from fct_training_result").fetchone() == (1, 3)
