"""MLPerf HPC as a second suite: its layout, its rule folders and how a build names its rounds."""

from pathlib import Path

import pytest

from pipelines.lib.mlperf.hpc import hpc_result_keys
from pipelines.lib.mlperf.rules import RulesError, folder_for_round, package_ruleset, ref_for_round
from pipelines.lib.mlperf.suites import HPC, SUITES, TRAINING, RoundKey, suite_named
from pipelines.lib.warehouse.build.inputs import _round_of_file

FOLDERS = {"hpc_1.0.0", "hpc_2.0.0", "hpc_3.0.0", "training_1.0.0", "training_4.1.0", "0.6.0", "training_0.7.0_warn"}


@pytest.mark.parametrize(("path", "expected"), [
    ("NVIDIA/results/eos/strong/deepcam/result_0.txt", ("NVIDIA", "eos", "strong", False, ["deepcam", "result_0.txt"])),
    ("NVIDIA/results/eos/weak/oc20/result_12.txt", ("NVIDIA", "eos", "weak", False, ["oc20", "result_12.txt"])),
    # v0.7: no strong/weak level; every result is a time to train (strong)
    ("CSCS/results/daint/cosmoflow/result_1.txt", ("CSCS", "daint", "strong", True, ["cosmoflow", "result_1.txt"])),
    ("F+R/results/fugaku/weak/cosmoflow/pruned_results/result_46.txt",
     ("F+R", "fugaku", "weak", False, ["cosmoflow", "pruned_results", "result_46.txt"])),
    ("NVIDIA/systems/eos.json", None),
])
def test_hpc_layout(path, expected):
    assert hpc_result_keys(path.split("/")) == expected


def test_each_suite_reads_its_own_rule_folders():
    assert folder_for_round(FOLDERS, "v1.0", HPC) == "hpc_1.0.0"
    assert folder_for_round(FOLDERS, "v2.0", HPC) == "hpc_2.0.0"
    assert folder_for_round(FOLDERS, "v4.0", HPC) == "hpc_3.0.0"  # an unseen round: the newest older rules
    assert folder_for_round(FOLDERS, "v0.7", HPC) == "hpc_1.0.0"  # older than every HPC folder: the nearest
    assert folder_for_round(FOLDERS, "v4.1", TRAINING) == "training_4.1.0"  # HPC folders never stand in
    assert folder_for_round({"hpc_3.0.0"}, "v4.1", TRAINING) is None
    assert folder_for_round({"training_4.1.0"}, "v3.0", HPC) is None
    # today's package: the HPC rule files only, entry hpc_X.Y.0/common.yaml
    rules = package_ruleset("v3.0", HPC)
    assert rules.entry == "hpc_3.0.0/common.yaml" and all(n.startswith("hpc_") for n, _ in rules.files)


def test_hpc_rounds_have_their_own_rules_refs():
    assert ref_for_round("v3.0", suite=HPC).ref == "acd623ea71e78bb39763c67f4accf16c4cf20a3f"
    assert ref_for_round("v3.0").ref == "3.0.0-rc2"  # Training v3.0 is another round
    assert ref_for_round("v0.7", suite=HPC).listed and "no release holds" in ref_for_round("v0.7", suite=HPC).why
    with pytest.raises(RulesError, match="HPC v9.0: rules_refs.csv does not list it"):  # resolved before staging
        ref_for_round("v9.0", suite=HPC)
    with pytest.raises(ValueError, match="not an MLPerf suite"):
        suite_named("inference-tiny")


def test_a_build_names_hpc_rounds_apart_from_training_rounds():
    assert RoundKey.parse("hpc:v3.0") == RoundKey(HPC, "v3.0") and RoundKey.parse("v3.0") == RoundKey(TRAINING, "v3.0")
    for suite in SUITES.values():  # every suite's key reads back as itself, an unseen round too
        for version in ("v0.5", "v3.0", "v9.9"):
            key = RoundKey(suite, version)
            assert RoundKey.parse(str(key)) == key and key.label == suite.round_label(version)
    assert _round_of_file("hpc_runs", Path("hpc_runs/v3.0.parquet")) == "hpc:v3.0"
    assert _round_of_file("training_runs", Path("training_runs/v3.0.parquet")) == "v3.0"
    assert _round_of_file("quarantine", Path("quarantine/hpc-v3.0.parquet")) == "hpc:v3.0"
    assert _round_of_file("quarantine", Path("quarantine/training-v3.0.parquet")) == "v3.0"
    assert _round_of_file("quarantine", Path("quarantine/prices-aws-2026-01-01.parquet")) is None


def test_an_hpc_archive_without_result_logs_names_the_hpc_layouts(tmp_path):
    from pipelines.lib.mlperf.hpc import parse_hpc_round
    from pipelines.lib.mlperf.rejections import NoResultLogs
    from pipelines.lib.mlperf.round_rules import RoundRules
    from support.logs import make_archive, system_json

    archive = tmp_path / "hpc_results_v1.0-main.tar.gz"
    archive.write_bytes(make_archive({"Acme/systems/box.json": system_json(), "README.md": b"# results\n"},
                                     top="hpc_results_v1.0-main"))
    with pytest.raises(NoResultLogs) as refused:
        parse_hpc_round(archive, "v1.0", RoundRules(None, None), workers=1)
    assert "<submitter>/results/<system>/{strong,weak}/<benchmark>/result_*.txt" in str(refused.value)
    assert "vX.Y.Z/" not in str(refused.value)  # Training's v0.5 layout is not an HPC one


def test_an_hpc_power_log_is_quarantined_with_its_reason_and_its_result_still_read(tmp_path):
    """No shared HPC round has power logs: one that comes is kept as a quarantine row that says why it adds no
    energy, and the result log beside it is read as usual."""
    from pipelines.lib.mlperf.hpc import parse_hpc_round
    from pipelines.lib.mlperf.round_rules import RoundRules
    from support.logs import make_archive, open_ssd_run, system_json

    system = "Acme/results/box/strong/cosmoflow"
    archive = tmp_path / "hpc_results_v3.0-main.tar.gz"
    archive.write_bytes(make_archive({
        "Acme/systems/box.json": system_json(),
        f"{system}/result_0.txt": "\n".join(open_ssd_run(1_000_000, 10)).encode(),
        f"{system}/power/result_0/node_0.txt": b'0: :::MLLOG {"key": "power_reading", "value": "1,100"}\n',
    }, top="hpc_results_v3.0-main"))
    tables = parse_hpc_round(archive, "v3.0", RoundRules(None, None), workers=1)
    assert [(r["run_file"], r["scale"], r["benchmark"]) for r in tables.runs] == [
        (f"{system}/result_0.txt", "strong", "cosmoflow")]
    assert [(q["file"], q["source"]) for q in tables.quarantine] == [
        (f"{system}/power/result_0/node_0.txt", "mlperf-hpc")]
    assert "HPC energy is not computed" in tables.quarantine[0]["reason"]
