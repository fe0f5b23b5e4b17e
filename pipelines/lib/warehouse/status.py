"""What is published and how the last refresh went, for `mlperf-warehouse status`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pipelines.lib.io.files import atomic_write_text
from pipelines.lib.io.jsonsafe import dumps_strict
from pipelines.lib.io.paths import builds_dir, published_db, warehouse_dir
from pipelines.lib.mlperf.suites import SUITES

LAST_REFRESH = "last_refresh.json"


def record_refresh_outcome(base: Path | None, ok: bool, detail: str, *, steps: list[dict] | None = None,
                           published: bool | None = None) -> Path:
    """Remember the last refresh's outcome (written atomically: status may read it at any time).
    `detail` is the summary as printed; `steps` the same as data (name, ok, seconds, detail)."""
    directory = builds_dir(base)
    directory.mkdir(parents=True, exist_ok=True)
    from pipelines.lib.io.redaction import redact

    record = {"ok": ok, "at": datetime.now(UTC).isoformat(), "published": published,
              "steps": [step | {"detail": redact(step.get("detail", ""))} for step in steps or []],
              "detail": redact(detail)}
    return atomic_write_text(directory / LAST_REFRESH, dumps_strict(record, indent=2))


def last_refresh(base: Path | None = None) -> dict | None:
    try:
        return json.loads((builds_dir(base) / LAST_REFRESH).read_text())
    except (OSError, ValueError):
        return None


def published_info(base: Path | None = None) -> dict | None:
    from pipelines.lib.warehouse.store import read_published_info

    return read_published_info(base)


def warehouse_status(base: Path | None = None) -> dict:
    """Build info, rounds and price snapshots read from the published file (read-only). The build, its time and
    fingerprint are the file's own (`store.published_build`); `published` is builds/published.json, which a
    publish writes after the file is in place, and `record_behind` says when it names another build (a publish
    killed in between: the next refresh, or a rollback, writes it again)."""
    from pipelines.lib.warehouse.store import list_builds

    base = (base or warehouse_dir()).resolve()
    from pipelines.lib.mlperf.rules_releases import pinned_on_first_use

    status = {"path": str(published_db(base)), "published": published_info(base), "last_refresh": last_refresh(base),
              "builds": [p.name for p in list_builds(base)], "build": None, "built_at": None, "fingerprint": None,
              "record_behind": None,
              **{suite.rounds_setting: [] for suite in SUITES.values()}, "prices": {}, "damaged": None,
              "rules_pinned_on_first_use": pinned_on_first_use(base)}
    if not published_db(base).exists():
        return status
    try:
        _read_published(base, status)
    except Exception as exc:  # a damaged file: show what the other records say, and how to recover
        status["damaged"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return status


def _read_published(base: Path, status: dict) -> None:
    from pipelines.lib.warehouse.query import connect_readonly
    from pipelines.lib.warehouse.store import published_build

    own = published_build(base) or {}
    status["build"], status["built_at"], status["fingerprint"] = own.get("build"), own.get("built_at"), own.get("fingerprint")
    record = status["published"] or {}
    if (record.get("build"), record.get("fingerprint")) != (own.get("build"), own.get("fingerprint")):
        status["record_behind"] = (f"builds/published.json names build {record.get('build') or '(none)'}: a publish or "
                                   "rollback stopped before recording the build it published; the next refresh "
                                   "records it")
    with connect_readonly(published_db(base)) as con:
        names = {n for (n,) in con.execute("select table_name from information_schema.tables").fetchall()}
        for suite in SUITES.values():  # each suite's rounds under the name of its rounds' setting
            if suite.results_model in names:
                status[suite.rounds_setting] = [r for (r,) in con.execute(
                    f"select distinct round from {suite.results_model} order by 1").fetchall()]
        if "fct_cloud_price" in names:
            status["prices"] = dict(con.execute(
                "select provider, max(fetched_at)::varchar from fct_cloud_price group by 1 order by 1").fetchall())
