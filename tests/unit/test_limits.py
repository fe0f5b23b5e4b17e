"""Every limit is a SETTINGS entry of pipelines/lib/io/limits.py, read when asked, set by its variable."""

import pytest

from pipelines.lib.io.limits import SETTINGS, SHARES, MiB, limit, share
from pipelines.lib.mlperf.rules import RulesError, ruleset_from_archive
from pipelines.lib.mlperf.stage import DEFAULT_MAX_SHRINK, max_shrink_from_env
from support.logs import make_rules_archive

RULE = "training_4.1.0/common.yaml"


def test_every_setting_names_its_variable_and_what_it_bounds():
    for name, (variable, default, what) in SETTINGS.items():
        assert variable.startswith("MLPERF_") and default > 0 and what, name
        if name in SHARES:
            assert share(name) == default
        else:
            assert limit(name) == default


def test_the_shrink_share_is_a_setting_with_its_bounds(monkeypatch):
    assert max_shrink_from_env() == DEFAULT_MAX_SHRINK == 0.25
    monkeypatch.setenv("MLPERF_MAX_SHRINK", "0.4")
    assert max_shrink_from_env() == 0.4
    monkeypatch.setenv("MLPERF_MAX_SHRINK", "1.5")
    with pytest.raises(ValueError, match="MLPERF_MAX_SHRINK must be a share between 0 and 1"):
        max_shrink_from_env()
    monkeypatch.setenv("MLPERF_MAX_SHRINK", "0")
    assert share("max_shrink") == 0.0
    with pytest.raises(KeyError):
        limit("max_shrink")
    with pytest.raises(KeyError):
        share("max_line_bytes")


def test_rule_files_over_their_limits_refuse_the_rules_archive(tmp_path, monkeypatch):
    archive = tmp_path / "logging.tar.gz"
    archive.write_bytes(make_rules_archive({RULE: "# " + "x" * (2 * MiB)}, "# checker\n"))
    with pytest.raises(RulesError, match="MLPERF_MAX_RULE_FILE_BYTES"):
        ruleset_from_archive(archive, "test", "v4.1")
    monkeypatch.setenv("MLPERF_MAX_RULE_FILE_BYTES", str(4 * MiB))
    monkeypatch.setenv("MLPERF_MAX_RULE_FILES_BYTES", str(MiB))
    with pytest.raises(RulesError, match="over the rule-file limit"):
        ruleset_from_archive(archive, "test", "v4.1")
    monkeypatch.setenv("MLPERF_MAX_RULE_FILES_BYTES", str(4 * MiB))
    try:
        ruleset_from_archive(archive, "test", "v4.1")
    except RulesError as error:  # past the limits, the archive fails for what it lacks, not for its size
        assert "limit" not in str(error)
