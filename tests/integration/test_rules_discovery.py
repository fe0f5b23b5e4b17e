"""Rules releases discovered like rounds: mlcommons/logging's tags through a fake of GitHub's API on 127.0.0.1
(real HTTP), the real release archives of ../shared, and the warehouse's own record of what it trusts."""

from __future__ import annotations

import io
import json
import tarfile

import duckdb
import pytest

from pipelines.cli import main as cli_main
from pipelines.lib.io.retry import RetryPolicy
from pipelines.lib.mlperf.rules import RulesError
from pipelines.lib.mlperf.rules_releases import (
    GitHubSource,
    listed_tags,
    load_record,
    pinned_on_first_use,
    release_line,
    release_tags,
)
from pipelines.lib.mlperf.stage import fetch_rules
from pipelines.lib.mlperf.suites import HPC, TRAINING
from pipelines.runner.jobs import refresh
from support.github import DEFAULT_HEAD, TAGS_PATH, serve_logging_repository, shared_tags
from support.http_server import LoopbackServer
from support.injected import inject
from support.paths import SHARED_MLPERF, needs_shared_mlperf
from support.refresh import refresh_settings

LOGGING = SHARED_MLPERF / "logging"
HEAD = DEFAULT_HEAD[0]


def _tags(*names: str) -> list[dict]:
    return [{"name": n, "commit": {"sha": f"{i:040x}"}} for i, n in enumerate(names)]


def test_a_round_s_release_line_puts_a_final_release_first_then_the_highest_candidate():
    tags = release_tags(_tags("6.0.0-rc2", "6.0.0-rc10", "6.0.0", "6.0.1-rc1", "hpc-6.0.0", "5.1.0-rc4",
                              "4.0.0-rc3-rcp-prunning", "4.0.0-rc2", "nightly", "v6.0"))
    assert [t.name for t in release_line(tags, "v6.0")] == ["6.0.0", "6.0.1-rc1", "6.0.0-rc10", "6.0.0-rc2"]
    assert [t.name for t in release_line(tags, "v4.0")] == ["4.0.0-rc3-rcp-prunning", "4.0.0-rc2"]
    assert release_line(tags, "v6.1") == []
    # HPC's releases are tagged hpc-X.Y.Z: another suite's tags are not its rules
    assert [t.name for t in release_line(release_tags(_tags("hpc-3.0.0", "3.0.0-rc2"), HPC), "v3.0")] == ["hpc-3.0.0"]


def test_the_tag_listing_follows_every_page_and_asks_again_conditionally(tmp_path):
    with LoopbackServer() as server:
        github = serve_logging_repository(server, tags=_tags(*(f"1.{i}.0" for i in range(130))))
        source = GitHubSource(server.url, token="test-token")
        items, note = listed_tags(source, tmp_path)
        assert len(items) == 130 and note == ""
        first = server.requests_for(TAGS_PATH)
        assert len(first) == 2 and all(h["authorization"] == "Bearer test-token" for _, _, h in first)
        assert listed_tags(source, tmp_path) == (items, "")  # a 304: the kept listing
        again = server.requests_for(TAGS_PATH)[2:]
        assert len(again) == 1 and "if-none-match" in again[0][2]
        github.rate_limited = True  # the budget spent: the last listing, said so
        items_now, note = listed_tags(source, tmp_path)
        assert items_now == items and note.startswith("GitHub rate limit: HTTP 403") and "the tags as listed" in note


@pytest.fixture
def release_site():
    """mlcommons/logging's tags and default branch (the fake API) and its real archives (../shared), on one server."""
    if not (LOGGING / "github_tags.json").exists():
        pytest.skip(f"{LOGGING} not found: the real rules releases are needed")
    with LoopbackServer(SHARED_MLPERF) as server:
        yield server, serve_logging_repository(server)


def _fetch(server, round_version: str, base, suite=TRAINING, **kwargs):
    return fetch_rules(round_version, f"{server.url}/logging/logging-{{ref}}.tar.gz", base,
                       RetryPolicy(max_attempts=1), suite=suite, github=GitHubSource(server.url), **kwargs)


@needs_shared_mlperf()
def test_v6_0_is_scored_by_its_newest_release_tag_and_pinned_on_first_use(release_site, tmp_path):
    server, _ = release_site
    rules = _fetch(server, "v6.0", tmp_path)
    assert (rules.ref.ref, rules.ref.source, rules.folder, rules.provisional) == (
        "6.0.0-rc6", "release_tag", "training_6.0.0", False)
    assert rules.trust.endswith("pinned on first use now")
    pin = pinned_on_first_use(tmp_path)["6.0.0-rc6"]
    assert pin["used_for"] == ["v6.0"] and len(pin["sha256"]) == 64
    assert load_record(tmp_path)["rounds"]["training:v6.0"]["ref"] == "6.0.0-rc6"
    # the next refresh finds the same content: trusted as pinned
    assert "pinned on first use 20" in _fetch(server, "v6.0", tmp_path).trust


@needs_shared_mlperf()
def test_a_round_no_tag_ships_yet_takes_the_default_branch_and_one_nothing_ships_is_provisional(release_site, tmp_path):
    server, _ = release_site
    v61 = _fetch(server, "v6.1", tmp_path)
    assert (v61.ref.ref, v61.ref.source, v61.folder, v61.provisional) == (HEAD, "default_branch", "training_6.1.0", False)
    assert "no release tag of v6.1's line" in v61.ref.why
    v62 = _fetch(server, "v6.2", tmp_path)
    assert (v62.ref.ref, v62.folder, v62.provisional) == (HEAD, "training_6.1.0", True)
    # HPC has its own tags: a new HPC round none of them ships is scored provisionally too, saying so
    hpc = _fetch(server, "v4.0", tmp_path, suite=HPC)
    assert hpc.provisional and hpc.folder == "hpc_3.0.0" and "no release tag of HPC v4.0's line" in hpc.ref.why


@needs_shared_mlperf()
def test_github_unreachable_keeps_the_ref_resolved_before_else_a_provisional_stand_in(release_site, tmp_path):
    server, _ = release_site
    unreachable = GitHubSource("http://github-api.invalid")
    template = f"{server.url}/logging/logging-{{ref}}.tar.gz"
    fresh = tmp_path / "fresh"
    stand_in = fetch_rules("v6.1", template, fresh, RetryPolicy(max_attempts=1), github=unreachable)
    assert stand_in.provisional and stand_in.ref.source == "stand_in" and stand_in.ref.ref == "5.1.0-rc4"
    assert any("github-api.invalid" in note for note in stand_in.notes)
    known = tmp_path / "known"
    _fetch(server, "v6.1", known)
    again = fetch_rules("v6.1", template, known, RetryPolicy(max_attempts=1), github=unreachable)
    assert (again.ref.ref, again.ref.source, again.provisional) == (HEAD, "default_branch", False)
    assert "(resolved earlier; now " in again.ref.why


@needs_shared_mlperf()
def test_a_ref_pinned_on_first_use_refuses_other_content_later(release_site, tmp_path):
    server, _ = release_site
    _fetch(server, "v6.0", tmp_path)
    site = tmp_path / "mirror" / "logging"
    site.mkdir(parents=True)
    original = (LOGGING / "logging-6.0.0-rc6.tar.gz").read_bytes()
    changed = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(original)) as src, tarfile.open(fileobj=changed, mode="w:gz") as out:
        for info in src:
            data = src.extractfile(info).read() if info.isfile() else None
            if info.name.endswith("training_6.0.0/closed_llama2_70b_lora.yaml"):
                data = data.replace(b"REQ:", b"REQ: ", 1)  # one byte more in one rule file
                info.size = len(data)
            out.addfile(info, io.BytesIO(data) if data is not None else None)
    (site / "logging-6.0.0-rc6.tar.gz").write_bytes(changed.getvalue())
    with LoopbackServer(tmp_path / "mirror") as mirror:
        serve_logging_repository(mirror)
        pinned = pinned_on_first_use(tmp_path)["6.0.0-rc6"]["sha256"]
        with pytest.raises(RulesError, match=rf"rules 6.0.0-rc6: content [0-9a-f]{{16}} is not the content pinned on "
                                             rf"first use {pinned[:16]}"):
            _fetch(mirror, "v6.0", tmp_path)
        assert "re-pinned" in _fetch(mirror, "v6.0", tmp_path, trusted_refs=frozenset({"6.0.0-rc6"})).trust


@needs_shared_mlperf()
@pytest.mark.slow
def test_an_injected_v6_1_is_scored_by_the_training_6_1_rules_and_publishes(tmp_path, warehouse, capsys):
    """A copy of the shared v6.0 named v6.1: no tag ships v6.1, the default branch (training_6.1.0) scores it."""
    site = tmp_path / "site"
    site.mkdir()
    inject(SHARED_MLPERF / "training_results_v6.0-main.tar.gz", site / "training_results_v6.1-main.tar.gz",
           round_name="v6.1")
    with LoopbackServer(site) as server, LoopbackServer(SHARED_MLPERF) as releases:
        serve_logging_repository(server)
        with pytest.MonkeyPatch.context() as env:
            env.setenv("MLPERF_GITHUB_API_URL", server.url)
            summary = refresh(refresh_settings(rounds=["v6.1"],
                                               results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                               rules_url_template=f"{releases.url}/logging/logging-{{ref}}.tar.gz"),
                              prices=False, backoff_seconds=0.01)
    assert summary.ok and summary.published, summary.render()
    with duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True) as con:
        assert con.execute("select ref, ref_source, rule_folder, provisional from dim_rules_release "
                           "where round = 'v6.1'").fetchone() == (HEAD, "default_branch", "training_6.1.0", False)
        rows = con.execute("select count(*), count(score_minutes), bool_or(rules_provisional) "
                           "from fct_training_result where round = 'v6.1'").fetchone()
    assert rows == (2, 2, False)
    assert json.loads((warehouse / "raw" / "rules" / "record.json").read_text())["pins"][HEAD]["used_for"] == ["v6.1"]
    capsys.readouterr()
    assert cli_main(["status"]) == 0  # what the warehouse trusts on first use, named
    out = capsys.readouterr().out
    assert "rules trusted on first use (1):" in out and f"  {HEAD}: content " in out and out.rstrip().count("for v6.1")


def test_the_shared_tag_listing_names_the_releases_the_reviewed_table_pins():
    """The table's refs that are tags are in GitHub's listing (the discovery reads the same names)."""
    if not (LOGGING / "github_tags.json").exists():
        pytest.skip(f"{LOGGING} not found")
    from pipelines.lib.mlperf.rules import _table

    names = {t["name"] for t in shared_tags()}
    tagged = {r.ref for r in _table().values() if not all(c in "0123456789abcdef" for c in r.ref)}
    assert tagged <= names
