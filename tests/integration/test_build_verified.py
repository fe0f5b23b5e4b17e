"""builds/verified.json spares a build from reopening kept builds and re-parsing every model, but a
file changed since it was verified is opened again (and removed when it is no longer finished)."""

from __future__ import annotations

import json

import duckdb
import pytest

from pipelines.lib.warehouse import build as wh
from pipelines.lib.warehouse.models import load_models
from pipelines.lib.warehouse.store import read_published_info
from support.mini_warehouse import stage_round
from support.paths import copy_warehouse

pytestmark = [pytest.mark.slow]  # five warehouse builds between the module's three tests


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    """A staged round built twice (the second build published, the first kept), built once for the module: each
    test damages its own copy."""
    base = tmp_path_factory.mktemp("two_builds")
    stage_round(base, "v5.0", systems=2)
    return base, wh.build(base, force=True), wh.build(base, force=True)


def test_verified_builds_and_models_are_recorded_and_a_damaged_kept_build_is_still_found(tmp_path, two_builds):
    base, first, second = two_builds
    copy_warehouse(base, tmp_path)
    record = json.loads((tmp_path / "builds" / "verified.json").read_text())
    assert set(record["builds"]) == {first.build, second.build}
    assert len(record["dependencies"]) == len(load_models())  # one digest per model, all checked

    # The older, unpublished build is damaged in place: its size changes, so it is opened, fails, goes.
    older = tmp_path / "builds" / first.build
    with open(older, "r+b") as fh:
        fh.truncate(16384)
    third = wh.build(tmp_path, force=True)
    assert not older.exists()
    record = json.loads((tmp_path / "builds" / "verified.json").read_text())
    assert set(record["builds"]) == {second.build, third.build}
    con = duckdb.connect(str(tmp_path / "mlperf.duckdb"), read_only=True)
    assert con.execute("select count(*) from fct_training_run").fetchone()[0] == third.models["fct_training_run"].rows
    assert third.models["fct_training_run"].rows == third.row_counts["fct_training_run"] > 0


def test_a_published_file_damaged_in_place_is_republished(tmp_path, two_builds):
    base, first, second = two_builds
    copy_warehouse(base, tmp_path)
    assert (tmp_path / "mlperf.duckdb").stat().st_ino == (tmp_path / "builds" / second.build).stat().st_ino
    with open(tmp_path / "mlperf.duckdb", "r+b") as fh:  # also damages `second`, its hard link
        fh.truncate(16384)
    wh.build(tmp_path)  # the damaged file is not mistaken for the verified build it was
    assert wh.published_opens(tmp_path) is None
    assert read_published_info(tmp_path)["build"] == first.build
    assert (tmp_path / "mlperf.duckdb").stat().st_ino == (tmp_path / "builds" / first.build).stat().st_ino
    wh.build(tmp_path, force=True)  # the damaged build, no longer published, is removed
    assert not (tmp_path / "builds" / second.build).exists()


def test_builds_found_finished_are_recorded_even_when_the_build_is_skipped(tmp_path):
    stage_round(tmp_path, "v5.0", systems=2)
    first = wh.build(tmp_path, force=True)
    (tmp_path / "builds" / "verified.json").unlink()  # e.g. builds kept by an older version
    assert wh.build(tmp_path).skipped
    record = json.loads((tmp_path / "builds" / "verified.json").read_text())
    assert set(record["builds"]) == {first.build} and record["dependencies"] == []
