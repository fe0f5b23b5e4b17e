"""The one atomic-write helper: readers see the old or the new content, and failures leave nothing behind."""

import os
import time

import duckdb
import pytest

from pipelines.lib.io.files import (
    TEMP_GLOB,
    atomic_write,
    atomic_write_bytes,
    atomic_write_text,
    create_file,
    replace_directory,
    temp_path,
)
from pipelines.lib.io.locking import STALE_SECONDS, remove_stale_files
from pipelines.lib.warehouse.query import fetch_dicts, quote_ident


def test_atomic_write_replaces_the_whole_file(tmp_path):
    target = tmp_path / "a.json"
    atomic_write_text(target, "old")
    assert atomic_write_bytes(target, b"new") == target
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temp_file(tmp_path):
    target = tmp_path / "a.txt"
    atomic_write_text(target, "old")

    def half_then_fail(tmp):
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old"
    assert list(tmp_path.glob(TEMP_GLOB)) == []


def test_create_file_writes_a_new_file_whole_and_never_over_an_existing_one(tmp_path):
    target = tmp_path / "run.db"
    assert create_file(target, b"template")
    assert target.read_bytes() == b"template" and target.stat().st_nlink == 1  # its temp link is gone
    assert not create_file(target, b"other")
    assert target.read_bytes() == b"template"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.db"]


def test_temp_files_are_hidden_beside_their_target_and_swept_when_stale(tmp_path):
    for folder in ("raw/mlperf", "staging/training_runs", "builds"):
        (tmp_path / folder).mkdir(parents=True)
    temps = [temp_path(tmp_path / folder / "x.parquet") for folder in ("raw/mlperf", "staging/training_runs", "builds")]
    temps.append(temp_path(tmp_path / "mlperf.duckdb"))
    fresh = temp_path(tmp_path / "raw" / "mlperf" / "y.tar.gz")  # a download in progress
    for path in [*temps, fresh]:
        assert path.name.startswith(".") and path.parent.glob(TEMP_GLOB)
        path.write_bytes(b"x")
    old = time.time() - STALE_SECONDS - 10
    for path in temps:
        os.utime(path, (old, old))
    assert sorted(remove_stale_files(tmp_path)) == sorted(temps)
    assert fresh.exists()


def test_download_temp_files_of_earlier_releases_are_swept_when_stale(tmp_path):
    folder = tmp_path / "raw" / "mlperf"
    folder.mkdir(parents=True)
    stale, fresh = folder / "v4.1.tar.gz.part-0a1b2c3d4e5f", folder / "v5.0.tar.gz.part-0f0e0d0c0b0a"
    kept = folder / "v4.1.tar.gz"  # a finished download is never touched, however old
    old = time.time() - STALE_SECONDS - 10
    for path in (stale, fresh, kept):
        path.write_bytes(b"x")
    for path in (stale, kept):
        os.utime(path, (old, old))
    assert remove_stale_files(tmp_path) == [stale]
    assert fresh.exists() and kept.exists()


def test_replace_directory_swaps_a_whole_directory(tmp_path):
    out, new = tmp_path / "export", tmp_path / ".export-new"
    out.mkdir()
    (out / "old.parquet").write_text("old")
    new.mkdir()
    (new / "new.parquet").write_text("new")
    replace_directory(new, out)
    assert [p.name for p in out.iterdir()] == ["new.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_fetch_dicts_keys_rows_by_column_name():
    con = duckdb.connect()
    assert fetch_dicts(con, "select 1 as a, ? as b union all select 2, 'y' order by a", ["x"]) == [
        {"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    assert fetch_dicts(con, "select 1 as a where false") == []


def test_quote_ident_names_any_table():
    con = duckdb.connect()
    name = 'odd "name" table'
    con.execute(f"create table {quote_ident(name)} as select 1 as x")
    assert fetch_dicts(con, f"select count(*) as n from {quote_ident(name)}") == [{"n": 1}]
