"""Log and system-file parsing on small hand-written inputs covering the quirks of real logs."""

import json
import time

import pytest

from pipelines.lib.mlperf import compliance
from pipelines.lib.mlperf.mllog import (
    MLL,
    MLLOG,
    MLP05,
    format_for_round,
    normalize_v05,
    parse_log,
)
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.rules import package_ruleset
from pipelines.lib.mlperf.run_throughput import steady_state_throughput
from pipelines.lib.mlperf.runs import run_facts
from pipelines.lib.mlperf.scorer import score_run
from pipelines.lib.mlperf.systems import availability_category, parse_system, to_count
from support.logs import mllog, open_ssd_run, system_json

V41_RULES = RoundRules(package_ruleset("v4.1"), package_ruleset("v4.1"))


def _log(lines, sep="\n"):
    return sep.join(lines).encode("latin-1")


def test_prefixes_crlf_and_noise_lines():
    lines = open_ssd_run(1_000_000, 10)
    noisy = ["Epoch 1 loss 0.3 " * 10] * 2000  # thousands of non-MLLOG lines
    prefixed = [f"[1,0]<stdout>:0: {line}" for line in lines]  # rank + logger prefixes
    log = parse_log(_log(noisy + prefixed + noisy, "\r\n"), MLLOG)
    assert not log.errors
    assert len(log.lines) == len(lines)
    assert log.total_lines == len(lines) + 4000
    assert log.lines[0].key == "cache_clear"
    assert compliance.check_log(log.lines, 0, package_ruleset("v4.1")).passed


def test_last_marker_on_a_line_wins_and_non_utf8_bytes_are_read_as_latin1():
    good = mllog("run_start", None, 5)
    raw = b"garbage \xff\xfe :::MLLOG {broken " + good.encode() + b"\n"
    log = parse_log(raw, MLLOG)
    assert not log.errors and log.lines[0].key == "run_start" and log.lines[0].time_ms == 5
    value = parse_log(mllog("submission_org", "caf\xe9", 1).encode("latin-1"), MLLOG).lines[0].value
    assert value["value"] == "caf\xe9"


def test_corrupted_json_is_a_parse_error_and_drops_the_run():
    lines = open_ssd_run(1_000_000, 10)
    lines[3] = lines[3].replace('"value": "box", "metadata"', '"value": "box"Lambda "metadata"')  # interleaved writers
    row = score_run(_log(lines), "v4.1", V41_RULES)
    assert row["parse_errors"] == 1
    assert row["drop_reason"] == "compliance: Log lines had parsing errors."
    assert row["time_to_train_minutes"] == 10.0  # still recorded, not scored


def test_duplicated_lines_pass_like_the_official_checker():
    lines = open_ssd_run(1_000_000, 10)
    lines = lines + [lines[-1]]  # the run_stop line printed twice: a silenced warning upstream
    row = score_run(_log(lines), "v4.1", V41_RULES)
    assert row["drop_reason"] is None
    assert row["time_to_train_minutes"] == 10.0


def test_failed_target_and_missing_run_stop_are_dropped_with_reasons():
    aborted = score_run(_log(open_ssd_run(0, 10, status="aborted", accuracy=1.5)), "v4.1", V41_RULES)
    assert aborted["status"] == "aborted"
    assert aborted["drop_reason"].startswith("compliance: Failed checks for eval_accuracy")
    no_stop = score_run(_log(open_ssd_run(0, 10)[:-1]), "v4.1", V41_RULES)
    assert "run_stop" in no_stop["drop_reason"]
    assert no_stop["run_stop_ms"] is None and no_stop["time_to_train_minutes"] is None
    garbage = score_run(b"\x00\x01 not a log at all \xff" * 100, "v4.1", V41_RULES)
    assert garbage["drop_reason"] == "compliance: No log lines detected"


def test_init_too_long_fails_the_official_rule():
    lines = open_ssd_run(10_000_000, 10)
    lines[1] = mllog("init_start", None, 10_000_000 - 5 * 3600 * 1000)  # 5 h of init > 4 h open-division limit
    row = score_run(_log(lines), "v4.1", V41_RULES)
    assert "init_stop" in row["drop_reason"]


def test_run_facts_batch_seed_convergence_and_throughput():
    log = parse_log(_log(open_ssd_run(0, 10, blocks=4)), MLLOG)
    facts = run_facts(log.lines)
    assert (facts.global_batch_size, facts.seed) == (256, 42)
    # ssd counts epochs: the convergence point is read in epochs, and says where it came from
    assert (facts.convergence_progress, facts.convergence_counted_in) == (4, "epochs")
    assert facts.convergence_source == "eval_accuracy epoch_num" and facts.convergence_null_reason is None
    # 10 min over 5 steps: each block lasts 120 s and processes 1 epoch → 1/120 epochs per second.
    assert abs(facts.steady_state_throughput - 1 / 120) < 1e-12
    # the log's own unit (ssd counts epochs); fct_training_run converts it to images/s
    assert facts.throughput_unit == "epochs/s" and facts.throughput_counting == "block_count"


def test_throughput_median_excludes_the_first_block():
    def block(t0, seconds, count):
        return [mllog("block_start", None, t0, epoch_count=count, first_epoch_num=0),
                mllog("block_stop", None, t0 + seconds * 1000)]
    lines = block(0, 100, 1) + block(100_000, 10, 100) + block(110_000, 20, 100) + block(130_000, 50, 100)
    got = steady_state_throughput(parse_log(_log(lines), MLLOG).lines, "resnet")
    assert got.per_second == 5.0  # rates 10, 5, 2 after the first → median 5
    assert (got.counted_in, got.counting) == ("epochs", "block_count")
    single = steady_state_throughput(parse_log(_log(block(0, 1, 1)), MLLOG).lines, "resnet")
    assert single.per_second is None and single.null_reason


def test_v06_mll_lines_are_seconds():
    raw = (b':::MLL 1560400000.5 run_start: {"value": null, "metadata": {"lineno": 1}}\n'
           b':::MLL 1560400060.5 run_stop: {"value": null, "metadata": {"status": "success"}}\n')
    log = parse_log(raw, MLL)
    assert [line.key for line in log.lines] == ["run_start", "run_stop"]
    assert log.lines[1].time_ms - log.lines[0].time_ms == 60_000
    assert format_for_round("v0.6") is MLL and format_for_round("v0.7") is MLLOG and format_for_round("v0.5") is MLP05


def test_v05_run_final_becomes_run_stop():
    raw = (b":::MLPv0.5.0 resnet 1541710000.000 (main.py:1) run_start\n"
           b":::MLPv0.5.0 resnet 1541710120.000 (main.py:9) run_stop: {\"success\": true}\n"
           b":::MLPv0.5.0 resnet 1541710121.000 (main.py:9) run_final\n")
    lines = normalize_v05(parse_log(raw, MLP05).lines)
    row = score_run(raw, "v0.5", RoundRules(None, None))
    assert [line.key for line in lines] == ["run_start", "run_stop"]
    assert row["drop_reason"] is None and row["time_to_train_minutes"] == 121 / 60


def test_today_s_rules_judge_only_rounds_the_pinned_package_ships_folders_of():
    """Today's rules judge a round only by its own folder of the pinned package, as the package's result
    summarizer does (it scores no ruleset it does not ship): a round newer than the package, one between its
    folders and one older than every folder get no verdict, with a reason naming the nearest folder; the
    verdict as published stands."""
    from dataclasses import replace

    from pipelines.lib.mlperf.rules import current_rules_missing, package_archive
    from pipelines.lib.mlperf.suites import HPC, TRAINING
    from support.paths import SHARED_MLPERF

    for suite in (TRAINING, HPC):
        folders = {(int(m.group(1)), int(m.group(2))): name for name in package_archive().folders
                   if (m := suite.rules_folder.match(name))}
        assert len(folders) >= 3, suite.name
        for major, minor in folders:
            assert current_rules_missing(f"v{major}.{minor}", suite) is None
        newest, oldest = max(folders), min(folders)
        between = next((a, b) for a in range(oldest[0], newest[0] + 1) for b in range(10)
                       if oldest < (a, b) < newest and (a, b) not in folders)
        nearest_below = max(v for v in folders if v < between)
        for version, nearest in (((newest[0] + 1, 0), newest), (between, nearest_below)):
            label = suite.round_label(f"v{version[0]}.{version[1]}")
            why = current_rules_missing(f"v{version[0]}.{version[1]}", suite)
            assert why.startswith("today's rules (mlperf-logging==") and why.endswith(
                f"ship none of {label} (their nearest: {folders[nearest]}), so they give it no verdict"), why
    assert "ship none of HPC v0.7 (their nearest: hpc_1.0.0)" in current_rules_missing("v0.7", HPC)
    assert current_rules_missing("v0.5") is None  # no rules at all: start, stop, success (RoundRules(None, None))
    # every round today's official scorer printed scores for is one the package ships
    for summary in [*SHARED_MLPERF.glob("official/v*_summary.csv"), *SHARED_MLPERF.glob("official/hpc/hpc_v*_summary.csv")]:
        suite, version = (HPC, summary.name.split("_")[1]) if summary.name.startswith("hpc_") else \
            (TRAINING, summary.name.split("_")[0])
        assert current_rules_missing(version, suite) is None, summary.name

    log = _log(open_ssd_run(1_000_000, 10))
    assert score_run(log, "v4.1", V41_RULES)["current_rules_drop_reason"] is None
    why = "today's rules (mlperf-logging==0) ship none of v4.1 (their nearest: training_4.0.0), so they give it no verdict"
    row = score_run(log, "v4.1", replace(V41_RULES, current_missing=why))
    assert row["drop_reason"] is None and row["time_to_train_minutes"] == 10.0
    assert row["current_rules_drop_reason"] == f"rules: {why}"


def test_system_files_with_misspelled_keys_string_counts_and_free_text_availability():
    doc = json.loads(system_json())
    doc["accelerator_per_node "] = doc.pop("accelerators_per_node")  # misspelled, trailing space
    doc["number_of_nodes"] = 2.0
    doc["status"] = "available in cloud"
    doc["division"] = "close"  # as a v1.0 submitter wrote it
    row = parse_system(json.dumps(doc).encode(), "Acme", "box")
    assert (row["accelerators_per_node"], row["number_of_nodes"], row["accelerator_count"]) == (8, 2, 16)
    assert row["availability_category"] == "cloud"
    assert row["division"] == "closed"
    assert "accelerator_per_node" in row["repaired_keys"]
    assert row["official_fields_missing"] == "accelerators_per_node"
    assert to_count("8.0") == 8 and to_count(" 16 ") == 16 and to_count("-") is None and to_count(2.5) is None
    assert availability_category("RDI") == "research" and availability_category("Preview") == "preview"


def test_system_file_that_is_not_json_raises_a_clear_error():
    import pytest

    with pytest.raises(ValueError, match="not valid JSON"):
        parse_system(b":::MLLOG {...} copied log, not JSON", "Acme", "box")


def test_a_rule_file_is_compiled_once_per_text_and_each_ruleset_judges_by_its_own():
    """Rulesets that share a file's text share its compiled config; a file whose text differs is compiled on
    its own and gives its own verdict, whichever ruleset was compiled first."""
    import dataclasses

    package = package_ruleset("v4.1")
    name = "training_4.1.0/open_ssd.yaml"
    stricter_text = package.texts[name].replace("v['value'] < 1.0", "v['value'] > 2.0")
    assert stricter_text != package.texts[name]
    stricter = dataclasses.replace(package, ref="stricter", files=tuple(
        (n, stricter_text if n == name else t) for n, t in package.files))
    lines = parse_log(_log(open_ssd_run(1_000_000, 10)), MLLOG).lines

    for first, second in ((stricter, package), (package, stricter)):
        compliance._compile_config.cache_clear()
        verdicts = {r.ref: compliance.check_log(lines, 0, r) for r in (first, second)}
        assert verdicts[package.ref].passed
        assert not verdicts["stricter"].passed
        assert "Failed checks for eval_accuracy" in verdicts["stricter"].reason
        common = "training_4.1.0/common.yaml"
        assert compliance.load_config(package, common) is compliance.load_config(stricter, common)
        assert compliance.load_config(package, name) is not compliance.load_config(stricter, name)


@pytest.mark.slow  # starts worker processes
def test_a_small_archive_is_scored_by_the_running_pool_and_a_pool_of_other_limits_is_replaced():
    """A small archive is scored in this process unless a scoring pool is already running (a refresh's later
    rounds), and then by that pool with the same rows. A pool started under other limits is not reused: its
    workers would judge by the old ones."""
    from pipelines.lib.io.context import amend
    from pipelines.lib.mlperf import scoring_pool

    log = _log(open_ssd_run(1_000_000, 10)).replace(b"\n", b"\r\n")
    path = "Acme/results/box/ssd/result_0.txt"

    def rows(scorer):
        with scorer:
            scorer.submit(path, log)
            return scorer.results()

    try:
        scoring_pool.shutdown_pool()
        here = scoring_pool.ResultScorer("v4.1", V41_RULES, 2, small=True)
        assert here.pool is None
        expected = rows(here)
        started = scoring_pool.ResultScorer("v4.1", V41_RULES, 2)
        assert started.pool is not None and scoring_pool.pool_running(2)
        reused = scoring_pool.ResultScorer("v4.1", V41_RULES, 2, small=True)
        assert reused.pool is started.pool
        assert rows(reused) == expected and expected[0][1]["time_to_train_minutes"] == 10.0

        amend(limits={"max_line_bytes": 4096})
        assert not scoring_pool.pool_running(2)
        assert scoring_pool.ResultScorer("v4.1", V41_RULES, 2, small=True).pool is None
        replaced = scoring_pool.ResultScorer("v4.1", V41_RULES, 2)
        assert replaced.pool is not None and replaced.pool is not started.pool
    finally:
        scoring_pool.shutdown_pool()


@pytest.mark.slow  # starts worker processes
def test_a_worker_that_sees_the_deadline_first_still_has_every_worker_ended():
    """On a busy machine a worker can report the round's deadline before this process's own wait runs out:
    the round is refused in the same words, and its workers are ended as those words say."""
    import concurrent.futures

    from pipelines.lib.mlperf import scoring_pool
    from pipelines.lib.mlperf.rejections import ScoringDeadline

    try:
        scoring_pool.shutdown_pool()
        scorer = scoring_pool.ResultScorer("v4.1", V41_RULES, 2)
        scorer.deadline = time.time() - 1  # passed: the worker refuses its batch at once
        with pytest.raises(ScoringDeadline) as caught, scorer:
            scorer.submit("Acme/results/box/ssd/result_0.txt", _log(open_ssd_run(1_000_000, 10)))
            scorer._flush()
            workers = list(scorer.pool._processes.values())  # the stdlib keeps no public handle
            concurrent.futures.wait([future for future, _ in scorer.pending])  # the worker has answered
            scorer.results()
        assert str(caught.value).startswith("v4.1: parsing and scoring did not finish within ")
        assert workers and not scoring_pool.pool_running(2)
        for worker in workers:
            worker.join(10)
        assert [w.exitcode for w in workers if w.exitcode is None] == []
    finally:
        scoring_pool.shutdown_pool()
