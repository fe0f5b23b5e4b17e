"""Every archive layout, the round an archive declares, and runs re-published across rounds and folders:
hand-built archives parsed and built into a real DuckDB warehouse."""

import json

import duckdb
import pytest

from pipelines.lib.mlperf.rejections import NoResultLogs, RoundMismatch
from pipelines.lib.mlperf.round_parser import parse_round
from pipelines.lib.mlperf.stage import archive_path, stage_round
from pipelines.lib.warehouse import build as wh
from support.logs import (
    install_package_rules,
    make_archive,
    open_ssd_run,
    package_rules,
    system_json,
)


def _v05_log(benchmark: str, start_s: float, minutes: float, success: bool = True) -> bytes:
    """A v0.5 log as the reference implementations wrote it: `run_stop` carries success, `run_final` ends."""
    stop_s = start_s + minutes * 60
    lines = [
        "Beginning trial 1 of 1",
        f":::MLPv0.5.0 {benchmark} {start_s - 30:.6f} (<string>:1) run_clear_caches",
        f":::MLPv0.5.0 {benchmark} {start_s - 10:.6f} (train.py:40) run_set_random_seed: 7",
        f":::MLPv0.5.0 {benchmark} {start_s:.6f} (train.py:41) run_start",
        f":::MLPv0.5.0 {benchmark} {start_s + 5:.6f} (train.py:50) input_batch_size: 256",
        f':::MLPv0.5.0 {benchmark} {stop_s - 1:.6f} (train.py:90) eval_accuracy: {{"epoch": 3, "value": 0.76}}',
        f':::MLPv0.5.0 {benchmark} {stop_s - 0.05:.6f} (train.py:99) run_stop: {{"success": {"true" if success else "false"}}}',
        f":::MLPv0.5.0 {benchmark} {stop_s:.6f} (train.py:100) run_final",  # v0.5 times a run to run_final
    ]
    return ("\n".join(lines) + "\n").encode()


def _entry_json(accelerator: str, per_node: int, nodes: int, hardware: str) -> bytes:
    return json.dumps({
        "division": "closed", "status": "cloud", "hardware": hardware, "framework": "TensorFlow 1.12",
        "nodes": [{"num_nodes": nodes, "cpu": "Intel Skylake", "accelerator": accelerator, "num_accelerators": per_node}],
    }).encode()


def _v05_members() -> dict[str, bytes]:
    members = {
        # <submitter>/<entry>/results/<system>/...
        "v0.5.0/acme/submission/submission.json": b'{"org": "Acme Inc.", "poc_email": "x@acme.test"}',
        "v0.5.0/acme/submission/results/dgx1/entry.json": _entry_json("Tesla V100-SXM2-16GB", 8, 1, "DGX-1V"),
        # one folder deeper, and the same system folder name (`tpu`) under two entries
        "v0.5.0/goog/cloud_v3.8/resnet-tpuv3-8/submission.json": b'{"org": "Goog"}',
        "v0.5.0/goog/cloud_v3.8/resnet-tpuv3-8/results/tpu/entry.json": _entry_json("tpuv3-8", 8, 1, "tpuv3-8"),
        "v0.5.0/goog/cloud_v3.8/ssd-tpuv3-8/results/tpu/entry.json": _entry_json("tpuv3-8", 8, 1, "tpuv3-8"),
        "v0.5.0/goog/research_v3.512/resnet-tpuv3-512/results/tpu/entry.json": _entry_json("tpuv3-512", 512, 32, "tpuv3-512"),
    }
    for i, minutes in enumerate([130, 135, 140, 145, 150]):
        members[f"v0.5.0/acme/submission/results/dgx1/resnet/result_{i}.txt"] = _v05_log("resnet", 1.5e9 + i * 1e5, minutes)
        members[f"v0.5.0/goog/cloud_v3.8/resnet-tpuv3-8/results/tpu/resnet/result_{i}.txt"] = _v05_log(
            "resnet", 1.6e9 + i * 1e5, 180 + i)
        members[f"v0.5.0/goog/cloud_v3.8/ssd-tpuv3-8/results/tpu/ssd/result_{i}.txt"] = _v05_log("ssd", 1.7e9 + i * 1e5, 70 + i)
        members[f"v0.5.0/goog/research_v3.512/resnet-tpuv3-512/results/tpu/resnet/result_{i}.txt"] = _v05_log(
            "resnet", 1.8e9 + i * 1e5, 7 + i, success=i != 4)
    return members


def _stage(base, round_version, members, top="training_results-main"):
    path = archive_path(round_version, base)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(make_archive(members, top=top))
    install_package_rules(base, round_version)
    stage_round(round_version, base)


def _connect(base):
    wh.build(base)
    return duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)


@pytest.mark.slow
def test_v05_layout_loads_with_systems_from_entry_json_and_scores(warehouse):
    _stage(warehouse, "v0.5", _v05_members(), top="training_results_v0.5-main")
    con = _connect(warehouse)
    rows = con.execute(
        "select submitter, system, benchmark, runs_total, runs_dropped, score_minutes, division, accelerator_count, "
        "accelerator_model_name from fct_training_result where round = 'v0.5' order by all"
    ).fetchall()
    assert rows == [
        ("acme", "submission/dgx1", "resnet", 5, 0, pytest.approx(140.0), "closed", 8, "Tesla V100-SXM2-16GB"),
        ("goog", "cloud_v3.8/resnet-tpuv3-8/tpu", "resnet", 5, 0, pytest.approx(182.0), "closed", 4, "tpuv3-8"),
        ("goog", "cloud_v3.8/ssd-tpuv3-8/tpu", "ssd", 5, 0, pytest.approx(72.0), "closed", 4, "tpuv3-8"),
        # run 4 logged success: false, so it is the dropped one: mean of 8, 9, 10 after the fastest goes
        ("goog", "research_v3.512/resnet-tpuv3-512/tpu", "resnet", 5, 1, pytest.approx(9.0), "closed", 256, "tpuv3-512"),
    ]
    # Events are keyed like their runs although the path is deeper than `<submitter>/results/...`.
    assert con.execute(
        "select count(*), count(*) filter (where submitter = 'goog' and system = 'cloud_v3.8/ssd-tpuv3-8/tpu' "
        "and benchmark = 'ssd') from fct_run_event where run_file like '%ssd-tpuv3-8%'"
    ).fetchone() == (15, 15)  # run_start, eval_accuracy, run_stop of 5 runs
    dim = con.execute("select system_name, number_of_nodes, accelerators_per_node from dim_system "
                      "where system = 'research_v3.512/resnet-tpuv3-512/tpu'").fetchone()
    assert dim == ("tpuv3-512", 32, 8)  # a 512-core slice is 256 chips, over the 32 hosts declared


def test_v05_layout_without_an_entry_folder_and_what_is_not_a_layout(tmp_path):
    members = {"v0.5.0/solo/results/box/entry.json": _entry_json("Tesla V100-SXM2-16GB", 8, 2, "2xDGX-1")}
    members |= {f"v0.5.0/solo/results/box/gnmt/result_{i}.txt": _v05_log("gnmt", 1.5e9 + i * 1e5, 20 + i) for i in range(3)}
    members["v0.5.0/solo/a/b/c/results/box/gnmt/result_9.txt"] = _v05_log("gnmt", 1.9e9, 5)  # `results` too deep
    members["solo/box/gnmt/result_8.txt"] = _v05_log("gnmt", 1.9e9, 5)  # no `results` folder
    archive = tmp_path / "v05.tar.gz"
    archive.write_bytes(make_archive(members))
    parsed = parse_round(archive, "v0.5", package_rules("v0.5"), workers=1)
    assert sorted((r["submitter"], r["system"], r["benchmark"], r["run_file"].rsplit("/", 1)[1]) for r in parsed.runs) == [
        ("solo", "box", "gnmt", f"result_{i}.txt") for i in range(3)
    ]
    assert [(s["system"], s["accelerator_count"]) for s in parsed.systems] == [("box", 16)]


V06_TEXT_SYSTEM = "\n".join([
    'org: {"value": "NVIDIA", "metadata": {"file": "mlperf_log_utils.py", "lineno": 231}}',
    'division: {"value": "closed", "metadata": {"file": "mlperf_log_utils.py", "lineno": 235}}',
    'status: {"value": "onprem", "metadata": {"file": "mlperf_log_utils.py", "lineno": 239}}',
    'platform: {"value": "32xNVIDIA DGX-2H", "metadata": {"file": "mlperf_log_utils.py", "lineno": 243}}',
    'entry: {"value": "' + (
        "{'os': 'Ubuntu 18.04', 'framework': 'MXNet NVIDIA Release 19.05', 'nodes': \\\"{'num_accelerators': '16', "
        "'cpu': '2x Intel(R) Xeon(R) Platinum 8174', 'accelerator': 'Tesla V100-SXM3-32GB-H', 'num_nodes': '32'}\\\", "
        "'hardware': 'NVIDIA DGX-2H'}"
    ) + '", "metadata": {"file": "mlperf_log_utils.py", "lineno": 247}}',
    'poc_name: {"value": "Someone", "metadata": {"file": "mlperf_log_utils.py", "lineno": 251}}',
]) + "\n"


def _mll_run(start_s: float, minutes: float) -> bytes:
    return (
        f':::MLL {start_s:.3f} run_start: {{"value": null, "metadata": {{"lineno": 1, "file": "t.py"}}}}\n'
        f':::MLL {start_s + minutes * 60:.3f} run_stop: {{"value": null, "metadata": {{"status": "success", '
        '"lineno": 2, "file": "t.py"}}\n'
    ).encode()


@pytest.mark.slow
def test_v06_text_systems_file_gives_accelerator_count_and_division(warehouse, tmp_path):
    members = {"NVIDIA/systems/dgx2h_n32_mxnet.json": V06_TEXT_SYSTEM.encode()}
    members |= {f"NVIDIA/results/dgx2h_n32_mxnet/resnet/result_{i}.txt": _mll_run(1.56e9 + i * 1e4, 2 + i) for i in range(5)}
    archive = tmp_path / "v06.tar.gz"
    archive.write_bytes(make_archive(members))
    parsed = parse_round(archive, "v0.6", package_rules("v0.6"), workers=1)
    assert parsed.quarantine == []
    (system,) = parsed.systems
    assert {k: system[k] for k in ("system_name", "submitter_declared", "division", "availability",
                                   "accelerator_model_name", "accelerators_per_node", "number_of_nodes",
                                   "accelerator_count", "framework")} == {
        "system_name": "32xNVIDIA DGX-2H", "submitter_declared": "NVIDIA", "division": "closed", "availability": "onprem",
        "accelerator_model_name": "Tesla V100-SXM3-32GB-H", "accelerators_per_node": 16, "number_of_nodes": 32,
        "accelerator_count": 512, "framework": "MXNet NVIDIA Release 19.05",
    }
    _stage(warehouse, "v0.6", members)
    con = _connect(warehouse)
    assert con.execute("select r.division, r.accelerator_count, s.accelerator from fct_training_result r "
                       "join dim_system s using (round, submitter, system)").fetchone() == (
        "closed", 512, "nvidia-v100-sxm3-32gb")


def test_archive_without_result_logs_in_any_layout_fails_clearly(tmp_path):
    archive = tmp_path / "empty.tar.gz"
    archive.write_bytes(make_archive({
        "Acme/systems/box.json": system_json(),
        "Acme/logs/box/ssd/result_0.txt": "\n".join(open_ssd_run(1_000_000, 10)).encode(),  # not a known layout
        "README.md": b"# results\n",
    }))
    with pytest.raises(NoResultLogs, match=r"v4\.1: .*no result logs in any known layout.*<submitter>/results/<system>"
                                           r"/<benchmark>/result_\*\.txt.*vX\.Y\.Z/<submitter>/<entry>"):
        parse_round(archive, "v4.1", package_rules("v4.1"), workers=1)


def test_archive_of_another_round_fails_the_partition(tmp_path, warehouse):
    members = {"Acme/systems/box.json": system_json()}
    members |= {f"Acme/results/box/ssd/result_{i}.txt": "\n".join(open_ssd_run(1_000_000 * (i + 1), 10 + i)).encode()
                for i in range(5)}
    v41 = tmp_path / "training_results_v5.0.tar.gz"
    v41.write_bytes(make_archive(members, top="training_results_v4.1-main"))  # v4.1's archive served for v5.0
    with pytest.raises(RoundMismatch,
                       match=r"v5\.0: .* is not round v5\.0: its top folder 'training_results_v4\.1-main' is round v4\.1"):
        parse_round(v41, "v5.0", package_rules("v5.0"), workers=1)
    parse_round(v41, "v4.1", package_rules("v4.1"), workers=1)  # the same archive for its own round is fine

    # The v0.5 layout declares its round twice: the `v0.5.0/` folder and the `:::MLPv0.5.0` lines.
    v05 = tmp_path / "v05.tar.gz"
    v05.write_bytes(make_archive(_v05_members()))
    with pytest.raises(RoundMismatch, match=r"20 result logs sit in the round folder 'v0\.5\.0'; "
                                            r"20 of 20 result logs are written as MLPv0\.5\.0 lines \(round v0\.5\)"):
        parse_round(v05, "v4.1", package_rules("v4.1"), workers=1)

    # Through the refresh step too.
    path = archive_path("v5.0", warehouse)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(v41.read_bytes())
    install_package_rules(warehouse, "v5.0")
    with pytest.raises(RoundMismatch, match="Check the results URL template"):
        stage_round("v5.0", warehouse)


def test_logs_that_declare_nothing_or_a_minority_of_older_logs_are_tolerated(tmp_path):
    members = {f"Acme/results/box/ssd/result_{i}.txt": "\n".join(open_ssd_run(1_000_000 * (i + 1), 10 + i)).encode()
               for i in range(4)}
    members["Acme/results/old/resnet/result_0.txt"] = _mll_run(1.56e9, 30)  # an old-generation log carried along
    archive = tmp_path / "mirror.tar.gz"
    archive.write_bytes(make_archive(members, top="mirror-of-the-results"))  # a top folder that names no round
    parsed = parse_round(archive, "v4.1", package_rules("v4.1"), workers=1)
    assert len(parsed.runs) == 5


@pytest.mark.slow
def test_carried_over_and_duplicated_results_are_flagged_and_scores_unchanged(warehouse):
    def runs(folder, minutes, offset, prefix=b""):
        return {f"{folder}/result_{i}.txt": prefix + "\n".join(open_ssd_run(offset + 1_000_000 * i, m)).encode()
                for i, m in enumerate(minutes)}

    first = {"Acme/systems/box.json": system_json(), "Beta/systems/old.json": system_json()}
    first |= runs("Acme/results/box/ssd", [10, 20, 30, 40, 50], 10**9)
    first |= runs("Beta/results/old/ssd", [20, 30, 40, 50, 60], 3 * 10**9)
    _stage(warehouse, "v4.0", first)
    later = {"Acme/systems/box.json": system_json(), "Acme/systems/box2.json": system_json(),
             "Acme-power/systems/box2.json": system_json(), "Beta/systems/new.json": system_json()}
    later |= runs("Acme/results/box/ssd", [10, 20, 30, 40, 50], 10**9)  # the same files again
    # Re-published with a line more (new bytes), same runs: carried over too.
    later |= runs("Beta/results/new/ssd", [20, 30, 40, 50, 60], 3 * 10**9, prefix=b":::SYSJSON {}\n")
    later |= runs("Acme/results/box2/ssd", [11, 12, 13, 14, 15], 2 * 10**9)  # new runs ...
    later |= runs("Acme-power/results/box2/ssd", [11, 12, 13, 14, 15], 2 * 10**9)  # ... published twice
    _stage(warehouse, "v4.1", later)
    con = _connect(warehouse)
    rows = con.execute(
        "select round, submitter, system, score_minutes, carried_over_from, duplicate_of "
        "from fct_training_result order by all"
    ).fetchall()
    assert rows == [
        ("v4.0", "Acme", "box", 30.0, None, None),
        ("v4.0", "Beta", "old", 40.0, None, None),
        ("v4.1", "Acme", "box", 30.0, "v4.0", None),
        ("v4.1", "Acme", "box2", 13.0, None, None),
        ("v4.1", "Acme-power", "box2", 13.0, None, "Acme/box2"),
        ("v4.1", "Beta", "new", 40.0, "v4.0", None),
    ]
    runs_seen = con.execute(
        "select round, submitter, system, count(*), count(distinct log_sha256), min(first_seen_round), "
        "min(first_seen_submitter || '/' || first_seen_system), max(first_seen_submitter || '/' || first_seen_system) "
        "from fct_training_run group by all order by all"
    ).fetchall()
    assert runs_seen == [
        ("v4.0", "Acme", "box", 5, 5, "v4.0", "Acme/box", "Acme/box"),
        ("v4.0", "Beta", "old", 5, 5, "v4.0", "Beta/old", "Beta/old"),
        ("v4.1", "Acme", "box", 5, 5, "v4.0", "Acme/box", "Acme/box"),
        ("v4.1", "Acme", "box2", 5, 5, "v4.1", "Acme/box2", "Acme/box2"),
        ("v4.1", "Acme-power", "box2", 5, 5, "v4.1", "Acme/box2", "Acme/box2"),
        ("v4.1", "Beta", "new", 5, 5, "v4.0", "Beta/old", "Beta/old"),
    ]
    # Same bytes, same hash; the copy re-published with a line more has its own hash.
    assert con.execute("select count(distinct log_sha256) from fct_training_run where run_file_name = 'result_0.txt' "
                       "and system in ('box', 'old', 'new')").fetchone()[0] == 3
