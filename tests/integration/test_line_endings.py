"""Real rounds of every suite with every text member's line endings made \\r\\n (a submitter's Windows checkout)
or a lone \\r (old Mac files), spellings no shared round has, refreshed over real HTTP: every result and run
equals what the shared build holds for the same round as published, value for value (the hashes of the files
as fetched aside)."""

from __future__ import annotations

import io
import shutil
import tarfile

import duckdb
import pytest

from pipelines.lib.mlperf.suites import HPC, INFERENCE, TRAINING
from pipelines.runner.jobs import refresh
from support.github import serve_logging_repository
from support.http_server import LoopbackServer
from support.paths import SHARED_MLPERF, needs_shared_mlperf
from support.refresh import refresh_settings
from support.shared_build import served_template, shared_build, shared_sources

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared, pytest.mark.shared_build]

# the smallest shared round of each suite, and the tables holding its results and runs
ROUNDS = {TRAINING: "v6.0", HPC: "v3.0", INFERENCE: "v5.1"}
TABLES = {"fct_training_result": "round = 'v6.0'", "fct_training_run": "round = 'v6.0'",
          "fct_hpc_result": "round = 'v3.0'", "fct_hpc_run": "round = 'v3.0'",
          "fct_inference_result": "round = 'v5.1'"}


def _copy_with_line_endings(source, target, ending: bytes) -> int:
    """`source` with each text member's line endings made `ending`; how many members changed."""
    changed = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source) as src, tarfile.open(target, "w:gz", compresslevel=1) as out:
        for info in src:
            data = src.extractfile(info).read() if info.isfile() else None
            if data is not None and b"\n" in data and b"\0" not in data:
                data = data.replace(b"\r\n", b"\n").replace(b"\n", ending)
                info.size = len(data)
                changed += 1
            out.addfile(info, io.BytesIO(data) if data is not None else None)
    return changed


def _rows(con: duckdb.DuckDBPyConnection, table: str, where: str) -> list[tuple]:
    columns = [c for (c,) in con.execute("select column_name from information_schema.columns where table_name = ? "
                                         "and table_schema = 'main' order by ordinal_position", [table]).fetchall()
               if "sha256" not in c]  # the files as fetched differ: their hashes do
    listed = ", ".join(f'"{c}"' for c in columns)
    return sorted(con.execute(f"select {listed} from {table} where {where}").fetchall(), key=repr)


@pytest.mark.parametrize("ending", [b"\r\n", b"\r"], ids=["crlf", "cr"])
def test_rounds_with_other_line_endings_give_the_same_results_and_runs_as_published(ending, tmp_path_factory,
                                                                                   monkeypatch):
    published = shared_build(tmp_path_factory)
    site = tmp_path_factory.mktemp("line-endings-site")
    for suite, round_version in ROUNDS.items():
        served = served_template(suite).format(version=round_version).lstrip("/")
        assert _copy_with_line_endings(SHARED_MLPERF / served, site / served, ending) > 0
    shutil.copytree(SHARED_MLPERF / "logging", site / "logging")  # the rules releases, as the shared build reads them
    base = tmp_path_factory.mktemp("line-endings") / "warehouse"
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    with LoopbackServer(site) as server:
        serve_logging_repository(server)
        monkeypatch.setenv("MLPERF_GITHUB_API_URL", server.url)
        given = shared_sources(server.url) | {s.rounds_setting: [r] for s, r in ROUNDS.items()}
        summary = refresh(refresh_settings(**given), prices=False, backoff_seconds=0.01)
    assert summary.ok and summary.published, summary.render()
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as mine_con, \
            duckdb.connect(str(published.db), read_only=True) as lf:
        for table, where in TABLES.items():
            mine = _rows(mine_con, table, where)
            assert mine == _rows(lf, table, where), table
            assert mine, f"{table} has no rows where {where}"
