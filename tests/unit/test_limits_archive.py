"""Hostile archives and values: bounded memory, and quarantine rows instead of failures."""

from __future__ import annotations

import io
import math
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import polars as pl
import pytest

from pipelines.lib.io.context import amend
from pipelines.lib.mlperf.archive import ArchiveError, iter_members
from pipelines.lib.mlperf.mllog import MLLOG, parse_log
from pipelines.lib.mlperf.tables import round_frames
from support.logs import (
    install_package_rules,
    make_archive,
    open_ssd_run,
    package_rules,
    system_json,
)
from support.paths import PROJECT_ROOT, SHARED_MLPERF, needs_shared_mlperf

MiB = 1 << 20
TOP = "training_results_v4.1-main"


class _Zeros(io.RawIOBase):
    """`size` zero bytes, optionally a newline every `line` bytes, produced on demand."""

    def __init__(self, size: int, line: int | None = None):
        self.left, self.line = size, line

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self.left)
        buffer[:n] = b"\0" * n
        if self.line:
            for i in range(self.line - 1, n, self.line):
                buffer[i] = 10
        self.left -= n
        return n


def bomb_archive(path: Path, member_size: int, *, line: int | None = None, good_runs: int = 5) -> Path:
    """A small .tar.gz: five good SSD runs and a system file, plus one zero-filled `result_9.txt`."""
    with tarfile.open(path, "w:gz") as tar:
        def add(name: str, data: bytes):
            info = tarfile.TarInfo(f"{TOP}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        add("Acme/systems/box.json", system_json())
        for i in range(good_runs):
            add(f"Acme/results/box/ssd/result_{i}.txt", "\n".join(open_ssd_run(10**6 * (i + 1), 10 + i)).encode())
        info = tarfile.TarInfo(f"{TOP}/Acme/results/box/ssd/result_9.txt")
        info.size = member_size
        tar.addfile(info, _Zeros(member_size, line))
    return path


def test_a_member_over_the_member_limit_is_quarantined_naming_the_limit(tmp_path, monkeypatch):
    amend(limits={"max_member_bytes": 16 * MiB})
    archive = bomb_archive(tmp_path / "a.tar.gz", 64 * MiB)
    assert archive.stat().st_size < 200_000  # a gzip bomb: 64 MiB in a few kB
    frames = round_frames(archive, "v4.1", package_rules("v4.1"))
    reasons = frames["quarantine"].filter(pl.col("file").str.ends_with("result_9.txt"))["reason"].to_list()
    assert len(reasons) == 1 and "over the 16 MiB member limit (MLPERF_MAX_MEMBER_BYTES)" in reasons[0]
    assert frames["training_runs"].height == 5  # the rest of the round is parsed


def test_a_line_over_the_line_limit_refuses_the_member_without_buffering_it(tmp_path, monkeypatch):
    amend(limits={"max_line_bytes": MiB})
    archive = bomb_archive(tmp_path / "a.tar.gz", 32 * MiB)  # no newline at all
    frames = round_frames(archive, "v4.1", package_rules("v4.1"))
    reasons = frames["quarantine"].filter(pl.col("file").str.ends_with("result_9.txt"))["reason"].to_list()
    assert len(reasons) == 1 and "line longer than the 1 MiB line limit" in reasons[0]
    assert frames["training_runs"].height == 5


def test_lines_without_a_log_token_cost_nothing_and_are_still_counted(tmp_path):
    archive = bomb_archive(tmp_path / "a.tar.gz", 8 * MiB, line=1024)
    members = {m.path: m for m in iter_members(archive)}
    zeros = members["Acme/results/box/ssd/result_9.txt"]
    assert zeros.refused is None and len(zeros.data) == 0 and zeros.data.physical_lines == 8 * MiB // 1024
    good = members["Acme/results/box/ssd/result_0.txt"]
    assert parse_log(good.data, MLLOG).total_lines == len(open_ssd_run(10**6, 10))


def test_universal_newlines_match_the_official_parser(tmp_path):
    lines = open_ssd_run(10**6, 10)
    text = ("noise\r" + "\r\n".join(lines[:5]) + "\r" + "\n".join(lines[5:]) + "\nno token at the end").encode()
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(make_archive({"Acme/results/box/ssd/result_0.txt": text}, TOP))
    member = next(m for m in iter_members(archive) if m.path.endswith("result_0.txt"))
    assert parse_log(member.data, MLLOG).total_lines == parse_log(text, MLLOG).total_lines == len(lines) + 2
    assert [line.key for line in parse_log(member.data, MLLOG).lines] == [line.key for line in parse_log(text, MLLOG).lines]


def test_the_archive_total_limit_fails_the_source_with_one_line(tmp_path, monkeypatch):
    amend(limits={"max_archive_total_bytes": 4 * MiB})
    archive = bomb_archive(tmp_path / "a.tar.gz", 8 * MiB)
    with pytest.raises(ArchiveError, match="over the 4 MiB total decompressed limit") as caught:
        list(iter_members(archive))
    assert "\n" not in str(caught.value)


PEAK_RSS_SCRIPT = """
import sys
from pathlib import Path
from pipelines.lib.io.context import amend
from pipelines.lib.mlperf.round_rules import RoundRules
amend(limits={"max_parse_workers": 1})
from pipelines.lib.mlperf.rules import package_ruleset
from pipelines.lib.mlperf.tables import round_frames
frames = round_frames(Path(sys.argv[1]), "v4.1", RoundRules(package_ruleset("v4.1"), package_ruleset("v4.1")))
print(frames["quarantine"]["reason"].to_list())
# VmHWM, not ru_maxrss: the latter keeps the high-water mark of the parent (pytest) across exec.
print(int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) // 1024)
"""


@pytest.mark.slow  # a 256 MiB archive read by a Python process started for its peak memory
def test_a_zero_filled_member_is_read_in_bounded_memory(tmp_path):
    """256 MiB of zeros with newlines (under every default limit): read line by line, never whole."""
    archive = bomb_archive(tmp_path / "a.tar.gz", 256 * MiB, line=4096)
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS_SCRIPT, str(archive)], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    peak_mb = int(proc.stdout.splitlines()[-1])
    assert "no MLPerf log lines" in proc.stdout  # the member became a quarantine row
    assert peak_mb < 400, f"peak RSS {peak_mb} MB: the member was buffered"


def _round(tmp_path: Path, members: dict[str, bytes]):
    archive = tmp_path / "round.tar.gz"
    archive.write_bytes(make_archive(members, TOP))
    return round_frames(archive, "v4.1", package_rules("v4.1"))


def _good_runs(n: int = 5) -> dict[str, bytes]:
    runs = {f"Acme/results/box/ssd/result_{i}.txt": "\n".join(open_ssd_run(10**6 * (i + 1), 10 + i)).encode()
            for i in range(n)}
    return {"Acme/systems/box.json": system_json(), **runs}


def test_deep_json_in_a_systems_file_is_quarantined(tmp_path):
    deep = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    frames = _round(tmp_path, _good_runs() | {"Acme/systems/deep.json": deep})
    reasons = frames["quarantine"].filter(pl.col("file") == "Acme/systems/deep.json")["reason"].to_list()
    assert reasons and "nested deeper than 256" in reasons[0]
    assert frames["training_systems"]["system"].to_list() == ["box"]


def test_deep_json_in_a_log_line_and_in_scaling_json_is_quarantined(tmp_path):
    lines = open_ssd_run(10**6, 10)
    lines.insert(3, ":::MLLOG " + '{"key": "x", "value": ' + "[" * 100_000 + "]" * 100_000 + ', "time_ms": 1, "metadata": {}}')
    members = _good_runs() | {"Acme/results/box/ssd/result_0.txt": "\n".join(lines).encode(),
                              "Acme/results/box/ssd/scaling.json": b"[" * 100_000 + b"]" * 100_000}
    frames = _round(tmp_path, members)
    q = frames["quarantine"]
    assert "nested deeper" in q.filter(pl.col("file").str.ends_with("result_0.txt"))["payload"][0] or \
        "could not be parsed" in q.filter(pl.col("file").str.ends_with("result_0.txt"))["reason"][0]
    assert "nested deeper than 256" in q.filter(pl.col("file").str.ends_with("scaling.json"))["reason"][0]
    run = frames["training_runs"].filter(pl.col("run_file").str.ends_with("result_0.txt")).row(0, named=True)
    assert run["parse_errors"] == 1 and run["drop_reason"]


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e400", "true"])
def test_a_non_finite_timestamp_drops_the_run_and_never_becomes_a_nan_score(tmp_path, bad):
    lines = open_ssd_run(10**6, 10)
    lines[-1] = re.sub(r'"time_ms": \d+', f'"time_ms": {bad}', lines[-1])  # the run_stop line
    frames = _round(tmp_path, _good_runs() | {"Acme/results/box/ssd/result_0.txt": "\n".join(lines).encode()})
    runs = frames["training_runs"]
    minutes = [m for m in runs["time_to_train_minutes"].to_list() if m is not None]
    assert all(math.isfinite(m) for m in minutes)
    run = runs.filter(pl.col("run_file").str.ends_with("result_0.txt")).row(0, named=True)
    assert run["parse_errors"] == 1 and not run["passed_compliance"] and run["time_to_train_minutes"] is None
    assert frames["training_events"].select(pl.col("time_ms").is_finite().all()).item()


@pytest.mark.slow  # reads a shared archive whole, then builds
@needs_shared_mlperf()
def test_one_real_v5_run_with_samples_count_1e12_keeps_its_run_and_nulls_the_value(tmp_path, warehouse):
    """An absurd value in a log the official scorer counts is nulled with its reason; the run stays."""
    from pipelines.lib.mlperf.stage import archive_path, stage_round
    from pipelines.lib.warehouse import build as wh

    source = SHARED_MLPERF / "training_results_v5.0-main.tar.gz"
    folder = "AMD/results/MI300X_EPYC_9575F_pytorch/llama2_70b_lora/"
    members = {}
    with tarfile.open(source, "r|gz") as tar:
        for info in tar:
            rel = info.name.split("/", 1)[-1]
            if info.isfile() and (rel.startswith(folder) or rel == "AMD/systems/MI300X_EPYC_9575F_pytorch.json"):
                members[rel] = tar.extractfile(info).read()
    edited = folder + "result_3.txt"
    members[edited] = re.sub(rb'"samples_count": \d+', b'"samples_count": 1e12', members[edited])
    target = archive_path("v5.0", warehouse)
    target.parent.mkdir(parents=True)
    target.write_bytes(make_archive(members, "training_results_v5.0-main"))
    install_package_rules(warehouse, "v5.0")
    stage_round("v5.0", warehouse)
    built = wh.build(warehouse)  # raises BuildFailed if a SQL test trips
    assert built.published
    import duckdb
    con = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True)
    reasons = [r for (r,) in con.execute("select reason from fct_quarantine where file = ?", [edited]).fetchall()]
    assert any("convergence_progress" in r and "value nulled, row kept" in r for r in reasons), reasons
    run = con.execute("select samples_to_converge, convergence_progress, values_nulled from fct_training_run "
                      "where run_file = ?", [edited]).fetchone()
    assert run[0] is None and run[1] is None and "convergence_progress" in run[2]
    assert con.execute("select count(*) from fct_training_run").fetchone()[0] == 10
    # the other runs keep their samples; the timeline events of the edited blocks are quarantined
    assert con.execute("select count(samples_to_converge) from fct_training_run").fetchone()[0] == 9
    assert con.execute("select max(samples_count) from stg_training_events").fetchone()[0] < 1e10
