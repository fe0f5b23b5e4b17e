"""The settings are read in one place (pipelines/settings.py), typed, and handed to the plain-function layer."""

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.lib.io import limits
from pipelines.lib.io.paths import warehouse_dir
from pipelines.lib.io.redaction import redact
from pipelines.lib.mlperf.suites import TRAINING
from pipelines.settings import SETTINGS, apply, load_settings
from support.paths import PROJECT_ROOT


def _environment_reads(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv") \
                and isinstance(node.value, ast.Name) and node.value.id == "os":
            found.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno} os.{node.attr}")
    return found


def test_lib_and_schemas_read_no_environment():
    files = [*(PROJECT_ROOT / "pipelines" / "lib").rglob("*.py"), *(PROJECT_ROOT / "schemas").rglob("*.py")]
    assert len(files) > 40
    assert [hit for f in files for hit in _environment_reads(f)] == []


def test_the_cli_reads_the_environment_only_to_start_the_ui():
    commands = [*(PROJECT_ROOT / "pipelines" / "commands").rglob("*.py"), PROJECT_ROOT / "pipelines" / "cli.py"]
    hits = [hit for f in commands for hit in _environment_reads(f)]
    assert hits and all(hit.startswith("pipelines/commands/ui.py") for hit in hits), hits


def test_settings_are_typed_read_once_and_applied(monkeypatch, tmp_path):
    monkeypatch.setenv("MLPERF_ROUNDS", "4.1, v5.0")
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(tmp_path / "w"))
    monkeypatch.setenv("MLPERF_MAX_JSON_DEPTH", "64")
    monkeypatch.setenv("MLPERF_GITHUB_TOKEN", "ghp_secretvalue123")
    settings = load_settings()
    assert settings.sources.suite(TRAINING).rounds == ["v4.1", "v5.0"] and settings.limits.max_json_depth == 64
    assert "ghp_secretvalue123" not in repr(settings) and "ghp_secretvalue123" not in str(settings.fingerprint())
    assert settings.fingerprint()["github_token"] == "set"
    monkeypatch.setenv("MLPERF_MAX_JSON_DEPTH", "128")  # read once: the object does not change
    assert settings.limits.max_json_depth == 64
    apply(settings)
    assert warehouse_dir() == tmp_path / "w" and limits.limit("max_json_depth") == 64
    assert redact("token ghp_secretvalue123 leaked") == "token [REDACTED] leaked"
    assert load_settings(warehouse_dir=tmp_path / "flag").paths.warehouse_dir == tmp_path / "flag"  # a flag wins


@pytest.mark.parametrize("variable, value, says", [
    ("MLPERF_ROUNDS", "v4.1,4.x", "not an MLPerf round"),
    ("MLPERF_MAX_MEMBER_BYTES", "-1", "MLPERF_MAX_MEMBER_BYTES must be positive"),
    ("MLPERF_MAX_MEMBER_BYTES", "big", "MLPERF_MAX_MEMBER_BYTES"),
    ("MLPERF_ACCEPT_SHRINK", "perhaps", "MLPERF_ACCEPT_SHRINK: not true or false"),
    ("MLPERF_PUE", "0.5", "MLPERF_PUE: '0.5' is not a number at least 1 and at most 5"),
    ("MLPERF_PUE", "nan", "MLPERF_PUE"),
    ("MLPERF_ELECTRICITY_USD_PER_KWH", "0", "MLPERF_ELECTRICITY_USD_PER_KWH: '0' is not a number greater than 0"),
    ("MLPERF_SUITES", "training,chess", "MLPERF_SUITES"),
])
def test_a_bad_setting_is_refused_naming_its_variable(monkeypatch, variable, value, says):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=says):
        load_settings()


def test_every_limit_and_setting_is_documented():
    for name, setting in SETTINGS.items():
        assert setting.description, name
    assert set(limits.LIMITS) <= set(SETTINGS)


def test_variable_names_in_any_case_empty_ones_unset_unknown_ones_ignored(monkeypatch):
    """Any letter case names the variable, an empty one is unset, a variable that names no setting is ignored,
    and a flag given as None leaves the variable's value."""
    monkeypatch.setenv("mlperf_Max_Json_Depth", "48")
    monkeypatch.setenv("MLPERF_ROUNDS", "")
    monkeypatch.setenv("MLPERF_NOT_A_SETTING", "anything")
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", "from-env")
    settings = load_settings(warehouse_dir=None)
    assert settings.limits.max_json_depth == 48
    assert settings.sources.suite(TRAINING).rounds == SETTINGS["rounds"].default == list(TRAINING.default_rounds)
    assert settings.paths.warehouse_dir == Path("from-env")
    with pytest.raises(ValueError, match="MLPERF_NOT_A_FIELD: no such setting"):  # a misspelt flag in code fails
        load_settings(not_a_field=1)


def test_values_are_read_into_their_types(monkeypatch):
    monkeypatch.setenv("MLPERF_ACCEPT_SHRINK", "Yes")
    monkeypatch.setenv("MLPERF_DEBUG", "off")
    monkeypatch.setenv("MLPERF_ELECTRICITY_USD_PER_KWH", "0.12")
    monkeypatch.setenv("MLPERF_TRUST_RULES_REFS", " a, b ,")
    monkeypatch.setenv("MLPERF_SUITES", "Training,HPC")
    monkeypatch.setenv("MLPERF_GCP_API_KEY", "AIzaSecret")
    settings = load_settings(rounds=["4.1"])
    assert settings.sources.accept_shrink is True and settings.debug is False
    assert settings.build.electricity_usd_per_kwh == 0.12 and settings.build_parameters().electricity_usd_per_kwh == 0.12
    assert settings.sources.trust_rules_refs == ["a", "b"] and settings.sources.suites == ["training", "hpc"]
    assert settings.sources.suite(TRAINING).rounds == ["v4.1"] and isinstance(settings.paths.warehouse_dir, Path)
    assert settings.secrets.gcp_api_key.get_secret_value() == "AIzaSecret"
    assert "AIzaSecret" not in repr(settings) and "AIzaSecret" not in str(settings.secrets.gcp_api_key)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.debug = True
    with pytest.raises(dataclasses.FrozenInstanceError):  # each group is frozen too
        settings.sources.accept_shrink = False


def test_reading_the_settings_imports_no_pydantic():
    """Every command reads the settings first: they stay a plain dataclass (pydantic's import alone was about
    half of a no-change refresh)."""
    code = "import sys, pipelines.settings as s; s.load_settings(); print('pydantic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_each_suite_has_its_rounds_and_results_settings_from_the_suite_table():
    """Each suite of the suite table gives its two settings (variable, default, description), held by
    `settings.sources.suite(<suite>)`; a flag given for one suite changes that suite's sources alone."""
    from pipelines.lib.mlperf.suites import SUITES
    from pipelines.settings import path_of

    settings = load_settings()
    for name, suite in SUITES.items():
        rounds, results = SETTINGS[suite.rounds_setting], SETTINGS[suite.results_setting]
        assert (rounds.default, rounds.description) == (list(suite.default_rounds), suite.rounds_description)
        assert (results.default, results.description) == (suite.default_results_url_template,
                                                           suite.results_description)
        assert path_of(suite.rounds_setting) == f"sources.suite({name}).rounds"
        assert settings.sources.suite(suite).rounds == settings.sources.suite(name).rounds == list(suite.default_rounds)
        other = settings.replaced(**{suite.results_setting: f"/mirror/{name}_{{version}}.tgz"})
        assert other.sources.suite(suite).results_url_template == f"/mirror/{name}_{{version}}.tgz"
        assert all(other.sources.suite(s) == settings.sources.suite(s) for s in SUITES if s != name)
    assert settings.sources.suites == [s.name for s in SUITES.values() if s.loaded_by_default]
    assert sum(s.takes_unlisted_rounds for s in SUITES.values()) == 1  # the one suite an unlisted round goes to


def test_every_setting_has_one_place_in_the_nested_settings_and_the_fingerprint_keeps_the_flat_names(monkeypatch):
    """SETTINGS names each setting's group; every Secret is in `settings.secrets` and nothing else is; the
    fingerprint a pre-flight manifest records is keyed by the variables' names, as before there were groups."""
    from pipelines.settings import GROUPS, SECRETS, Secret

    monkeypatch.setenv("MLPERF_GITHUB_TOKEN", "ghp_x")
    monkeypatch.setenv("MLPERF_HPC_ROUNDS", "v3.0")
    settings = load_settings()
    assert all(setting.group in (*GROUPS, "") for setting in SETTINGS.values())
    assert set(SECRETS) == {name for name, s in SETTINGS.items() if getattr(s.read, "secret", False)}
    assert settings.secrets.github_token == Secret("ghp_x") and settings.value("github_token") == Secret("ghp_x")
    assert set(settings.fingerprint()) == set(SETTINGS) - {"debug"}
    assert settings.fingerprint()["hpc_rounds"] == ["v3.0"] and settings.fingerprint()["github_token"] == "set"
    for name in SETTINGS:  # one path each: value() finds what the group holds
        group = getattr(settings, SETTINGS[name].group) if SETTINGS[name].group else settings
        holder = group.suite(SETTINGS[name].suite) if SETTINGS[name].suite else group
        assert getattr(holder, SETTINGS[name].field or name) is settings.value(name)


def test_replaced_reads_a_flag_as_its_variable_and_keeps_the_rest():
    settings = load_settings()
    flagged = settings.replaced(accept_shrink=True, trust_rules_refs=["r1"], rules_url_template=None)
    assert flagged.sources.accept_shrink is True and flagged.sources.trust_rules_refs == ["r1"]
    assert flagged.sources.rules_url_template == settings.sources.rules_url_template  # None: not given
    assert flagged.limits == settings.limits and settings.sources.accept_shrink is False
    with pytest.raises(ValueError, match="MLPERF_HPC_RESULTS_URL_TEMPLATE"):
        settings.replaced(hpc_results_url_template="https://mirror.example/static.tgz")
