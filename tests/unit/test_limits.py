"""Every limit is a LIMITS entry of pipelines/lib/io/limits.py, set by its MLPERF_<NAME> variable through the
settings layer (pipelines/settings.py); the plain-function layer reads only what was installed."""

import pytest

from pipelines.lib.io.context import amend
from pipelines.lib.io.limits import LIMITS, SHARES, MiB, limit, share
from pipelines.lib.mlperf.rules import RulesError, ruleset_from_archive
from pipelines.lib.mlperf.stage import DEFAULT_MAX_SHRINK
from pipelines.settings import SETTINGS, load_settings
from support.logs import make_rules_archive

RULE = "training_4.1.0/common.yaml"


def test_every_limit_is_a_setting_with_its_default_and_what_it_bounds():
    for name, (default, what) in LIMITS.items():
        assert default > 0 and what, name
        assert name in SETTINGS and SETTINGS[name].default == default
        assert (share(name) if name in SHARES else limit(name)) == default


def test_a_limit_comes_from_its_variable_once_applied(monkeypatch, settings_from_env):
    monkeypatch.setenv("MLPERF_MAX_LINE_BYTES", "1e6")
    assert limit("max_line_bytes") == 4 * MiB  # the environment alone changes nothing in lib
    settings_from_env()
    assert limit("max_line_bytes") == 1_000_000
    monkeypatch.setenv("MLPERF_MAX_LINE_BYTES", "lots")
    with pytest.raises(ValueError, match="MLPERF_MAX_LINE_BYTES"):
        load_settings()


def test_the_shrink_share_is_a_setting_with_its_bounds(monkeypatch):
    assert load_settings().limits.max_shrink == DEFAULT_MAX_SHRINK == 0.25
    monkeypatch.setenv("MLPERF_MAX_SHRINK", "0.4")
    assert load_settings().limits.max_shrink == 0.4
    monkeypatch.setenv("MLPERF_MAX_SHRINK", "1.5")
    with pytest.raises(ValueError, match="MLPERF_MAX_SHRINK must be a share between 0 and 1"):
        load_settings()
    amend(limits={"max_shrink": 0})
    assert share("max_shrink") == 0.0
    with pytest.raises(KeyError):
        limit("max_shrink")
    with pytest.raises(KeyError):
        share("max_line_bytes")
    with pytest.raises(ValueError, match="MLPERF_MAX_LINE_BYTES must be positive"):
        amend(limits={"max_line_bytes": 0})


def test_rule_files_over_their_limits_refuse_the_rules_archive(tmp_path):
    archive = tmp_path / "logging.tar.gz"
    archive.write_bytes(make_rules_archive({RULE: "# " + "x" * (2 * MiB)}, "# checker\n"))
    with pytest.raises(RulesError, match="MLPERF_MAX_RULE_FILE_BYTES"):
        ruleset_from_archive(archive, "test", "v4.1")
    amend(limits={"max_rule_file_bytes": 4 * MiB, "max_rule_files_bytes": MiB})
    with pytest.raises(RulesError, match="over the rule-file limit"):
        ruleset_from_archive(archive, "test", "v4.1")
    amend(limits={"max_rule_file_bytes": 4 * MiB, "max_rule_files_bytes": 4 * MiB})
    try:
        ruleset_from_archive(archive, "test", "v4.1")
    except RulesError as error:  # past the limits, the archive fails for what it lacks, not for its size
        assert "limit" not in str(error)
