"""Tests that refresh a copy of a published warehouse need the copy to be one: the published file stays a hard
link of its build (publishing, recovery and the build's "already verified" check compare inodes)."""

import os

from support.paths import copy_warehouse


def test_a_copy_keeps_hard_links_and_symlinks_and_copies_everything_else(tmp_path):
    source = tmp_path / "warehouse"
    (source / "builds").mkdir(parents=True)
    build = source / "builds" / "mlperf-1.duckdb"
    build.write_bytes(b"build")
    os.link(build, source / "mlperf.duckdb")  # published as publishing does it
    (source / "builds" / "mlperf-0.duckdb").write_bytes(b"older")
    (source / "latest").symlink_to("builds/mlperf-1.duckdb")
    target = tmp_path / "copy"
    target.mkdir()  # the `warehouse` fixture's empty folder

    copy_warehouse(source, target)

    published, copied_build = target / "mlperf.duckdb", target / "builds" / "mlperf-1.duckdb"
    assert published.read_bytes() == b"build" and published.stat().st_ino == copied_build.stat().st_ino
    assert published.stat().st_ino != build.stat().st_ino  # a copy, not a link into the source
    assert (target / "builds" / "mlperf-0.duckdb").stat().st_nlink == 1
    assert os.readlink(target / "latest") == "builds/mlperf-1.duckdb"
    published.write_bytes(b"changed")
    assert build.read_bytes() == b"build"  # the source is untouched by what a test does to its copy
