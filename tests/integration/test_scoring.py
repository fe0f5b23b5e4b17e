"""Official scoring rules on a hand-made archive: olympic mean, drops, unet3d, scaling.json."""

import duckdb
import pytest

from pipelines.lib.mlperf.stage import archive_path, stage_round
from pipelines.lib.warehouse import build as wh
from support.cli import CLI
from support.logs import install_package_rules, make_archive, open_ssd_run, system_json

pytestmark = [pytest.mark.slow]


def _runs(minutes, bench_dir, statuses=None):
    """`aborted` runs also never reach an accuracy the open-division rules accept (< 1.0)."""
    statuses = statuses or ["success"] * len(minutes)
    return {
        f"{bench_dir}/result_{i}.txt": "\n".join(
            open_ssd_run(1_000_000 * (i + 1), m, status=s, accuracy=0.5 if s == "success" else 1.5)
        ).encode()
        for i, (m, s) in enumerate(zip(minutes, statuses, strict=False))
    }


def _build(base, members, round_version="v4.1"):
    path = archive_path(round_version, base)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(make_archive(members))
    install_package_rules(base, round_version)
    stage_round(round_version, base)
    wh.build(base)
    return duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)


def _score(con, system, benchmark="ssd"):
    return con.execute(
        "select score_minutes, runs_total, runs_dropped, rcp_scaling_factor, no_score_reason, accelerator_count "
        "from fct_training_result where system = ? and benchmark = ?", [system, benchmark]
    ).fetchone()


def test_olympic_mean_drops_and_scaling(warehouse):
    members = {"Acme/systems/a.json": system_json(), "Acme/systems/b.json": system_json(),
               "Acme/systems/c.json": system_json(), "Acme/systems/d.json": system_json(accelerators_per_node=4)}
    members |= _runs([10, 20, 30, 40, 50], "Acme/results/a/ssd")  # drop 10 and 50 → mean 30
    # 50 failed: drop 10 → (20+30+40)/3
    members |= _runs([10, 20, 30, 40, 50], "Acme/results/b/ssd", ["success"] * 4 + ["aborted"])
    members |= _runs([10, 20, 30, 40, 50], "Acme/results/c/ssd", ["aborted", "aborted", "success", "success", "success"])
    members |= _runs([12, 20, 28], "Acme/results/d/ssd")  # 20, then × 1.5
    members["Acme/results/d/ssd/scaling.json"] = b'{"scaling_factor": 1.5}'
    con = _build(warehouse, members)
    assert _score(con, "a") == (30.0, 5, 0, 1.0, None, 16)
    assert _score(con, "b")[:3] == (30.0, 5, 1)
    score_c = _score(con, "c")
    assert score_c[0] is None and score_c[2] == 2 and score_c[4].startswith("too many runs dropped")
    assert _score(con, "d")[0] == pytest.approx(30.0) and _score(con, "d")[3] == 1.5 and _score(con, "d")[5] == 8
    kept = con.execute(
        "select time_to_train_minutes from fct_training_run where system = 'a' and in_olympic_mean order by 1"
    ).fetchall()
    assert kept == [(20.0,), (30.0,), (40.0,)]
    statuses = dict(con.execute("select run_file_name, status from fct_training_run where system = 'b'").fetchall())
    assert statuses["result_4.txt"] == "dropped" and statuses["result_0.txt"] == "scored"


def test_unet3d_allows_four_drops(warehouse):
    # Folder named unet3d: up to 4 failed runs; the 4 fastest and (4 - failed) slowest are trimmed.
    minutes = list(range(1, 41))
    statuses = ["aborted"] * 3 + ["success"] * 37
    members = {"Acme/systems/u.json": system_json()} | _runs(minutes, "Acme/results/u/unet3d", statuses)
    con = _build(warehouse, members)
    passed = sorted(minutes[3:])  # 4..40 scored
    kept = passed[4:len(passed) - 1]  # drop 4 fastest and 4 - 3 = 1 slowest
    assert _score(con, "u", "unet3d")[0] == pytest.approx(sum(kept) / len(kept))


def test_broken_scaling_json_gives_no_score_and_a_quarantine_row(warehouse):
    members = {"Acme/systems/a.json": system_json()} | _runs([10, 20, 30], "Acme/results/a/ssd")
    members["Acme/results/a/ssd/scaling.json"] = b"{not json"
    con = _build(warehouse, members)
    score = _score(con, "a")
    assert score[0] is None and "scaling.json unusable" in score[4]
    reasons = [r for (r,) in con.execute("select reason from fct_quarantine").fetchall()]
    assert any("scaling.json unusable" in r for r in reasons)


def test_odd_file_names_and_keys_come_from_folders_not_logs(warehouse):
    # Logs that claim another submitter and benchmark; files named as real submitters name them.
    runs = [open_ssd_run(10**6 * (i + 1), m) for i, m in enumerate([10, 20, 30])]
    runs = ["\n".join(r).replace('"Acme"', '"SomeoneElse"') for r in runs]
    members = {"Acme/systems/box.json": system_json()}
    for name, text in zip(["result_04.txt", "result_240930043022868987627_01.txt", "result_2.txt"], runs, strict=False):
        members[f"Acme/results/box/ssd/{name}"] = text.encode()
    members["Acme/results/box/ssd/notes.txt"] = b"not a result file"
    con = _build(warehouse, members)
    names = {n for (n,) in con.execute("select run_file_name from fct_training_run").fetchall()}
    assert names == {"result_04.txt", "result_240930043022868987627_01.txt", "result_2.txt"}
    keys = con.execute("select distinct submitter, system, benchmark from fct_training_run").fetchall()
    assert keys == [("Acme", "box", "ssd")]
    assert _score(con, "box")[0] == 20.0


def test_query_command_formats(warehouse):
    import json
    import subprocess

    _build(warehouse, {"Acme/systems/a.json": system_json()} | _runs([10, 20, 30], "Acme/results/a/ssd"))
    cli = CLI + ["query", "select system, score_minutes from fct_training_result"]
    table = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    assert "score_minutes" in table and table.splitlines()[2].split() == ["a", "20"] and "(1 row)" in table
    csv_out = subprocess.run(cli + ["--format", "csv"], capture_output=True, text=True, check=True).stdout
    assert csv_out.splitlines() == ["system,score_minutes", "a,20.0"]
    rows = json.loads(subprocess.run(cli + ["--format", "json"], capture_output=True, text=True, check=True).stdout)
    assert rows == [{"system": "a", "score_minutes": 20.0}]
    bad = subprocess.run(cli[:-1] + ["select * from no_such_table"], capture_output=True, text=True)
    # an unknown table is a usage error (exit 2) that lists the tables there are
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "no_such_table" in bad.stderr


def test_bare_available_is_cloud_only_for_a_cloud_submitter(warehouse):
    # The native-cloud rule (int_submitter_cloud) decides what a bare "available" means.
    members = {"Google/systems/tpu.json": system_json(submitter="Google", status="available"),
               "Acme/systems/a.json": system_json(status="available")}
    members |= _runs([10, 20, 30], "Google/results/tpu/ssd") | _runs([10, 20, 30], "Acme/results/a/ssd")
    con = _build(warehouse, members)
    assert dict(con.execute("select submitter, availability_category from dim_system").fetchall()) == {
        "Google": "cloud", "Acme": "on-premise"}
    assert con.execute("select * from int_submitter_cloud").fetchall() == [("Google", "gcp")]
