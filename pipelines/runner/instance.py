"""The persistent Dagster instance the CLI runs on and `dg dev` shows: `DAGSTER_HOME` when set, else
`<warehouse>/dagster` (SQLite run, event and schedule storage; everything stays in the warehouse dir)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import yaml

from pipelines.lib.io.files import atomic_write_text
from pipelines.lib.io.paths import warehouse_dir

# Written once when the home has no dagster.yaml: default SQLite storage under the home; no usage
# statistics (their first-run banner and log files would land in the output) and no newsletter
# dialog over the UI on first open.
DAGSTER_YAML = """\
# Written by mlperf-warehouse: the Dagster instance of this warehouse (SQLite storage in this folder).
telemetry:
  enabled: false
nux:
  enabled: false
"""


# dagster.yaml keys that choose a storage: where one is set, the home's own storage is used as it is.
STORAGE_KEYS = {"storage", "run_storage", "event_log_storage", "schedule_storage"}


def instance_home() -> Path:
    home = os.environ.get("DAGSTER_HOME")
    return Path(home).resolve() if home else warehouse_dir() / "dagster"


def prepare_home() -> Path:
    """The instance home, created with a dagster.yaml if it has none (an existing one is kept)."""
    home = instance_home()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        atomic_write_text(home / "dagster.yaml", DAGSTER_YAML)
    return home


@contextmanager
def warehouse_instance() -> Iterator[dg.DagsterInstance]:
    """The instance of the home; on Dagster's default SQLite storage (a dagster.yaml that names no
    storage of its own), with the same files kept open by instance_storage.py's classes."""
    from dagster._core.instance.ref import InstanceRef

    from pipelines.runner.instance_storage import storage_overrides

    home = prepare_home()
    config = yaml.safe_load((home / "dagster.yaml").read_text()) or {}
    overrides = None if STORAGE_KEYS & set(config) else storage_overrides(str(home))
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides=overrides)) as instance:
        yield instance
