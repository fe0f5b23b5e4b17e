"""Roll the published warehouse back to a kept build (atomically, via `warehouse.publish`)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from pipelines.lib.io.paths import warehouse_dir
from pipelines.lib.warehouse.build import (
    finished_build_error,
    list_builds,
    publish,
    read_published_info,
    write_published_info,
)
from pipelines.lib.warehouse.query import quote_ident


def complete_builds(base: Path | None = None) -> list[Path]:
    """Kept builds that finished: a build killed part-way has no `_build_info` (or left a WAL behind)."""
    return [path for path in list_builds(base)
            if not path.with_name(path.name + ".wal").exists() and finished_build_error(path) is None]


def read_build_record(path: Path) -> dict:
    """A kept build's published.json record (name, fingerprint, build time, row counts, the rounds whose
    new data it left out), read from the file."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        built_at, fingerprint = con.execute("select built_at, fingerprint from _build_info").fetchone()
        try:  # builds before the rounds' exclusion was recorded have no such column
            excluded = json.loads(con.execute("select excluded_rounds from _build_info").fetchone()[0] or "{}")
        except duckdb.Error:
            excluded = {}
        names = [n for (n,) in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main' order by 1").fetchall()]
        counts = {n: con.execute(f"select count(*) from {quote_ident(n)}").fetchone()[0] for n in names}
    finally:
        con.close()
    return {"fingerprint": fingerprint, "build": path.name, "built_at": built_at, "row_counts": counts,
            "excluded_rounds": excluded}


def rollback(base: Path | None = None, to: str | None = None) -> dict:
    """Publish the kept build before the current one, or the build named `to` (file name or stamp).

    published.json then carries that build's fingerprint, so the next refresh rebuilds (and
    republishes) as soon as the current inputs differ from the rolled-back build's.
    """
    from pipelines.lib.io.locking import build_lock
    from pipelines.lib.io.paths import builds_dir

    base = (base or warehouse_dir()).resolve()
    with build_lock(builds_dir(base)):  # not while a build is about to publish
        return _rollback(base, to)


def _rollback(base: Path, to: str | None) -> dict:
    builds = complete_builds(base)
    current = (read_published_info(base) or {}).get("build")
    if to:
        matches = [p for p in builds if to in (p.name, p.stem, p.stem.removeprefix("mlperf-"))]
        if not matches:
            raise ValueError(f"no complete kept build named {to!r}; kept: {', '.join(p.name for p in builds) or 'none'}")
        target = matches[0]
    else:
        older = [p for p in builds if current is None or p.name < current]
        if not older:
            raise ValueError(f"no kept build older than the published one ({current}); nothing to roll back to")
        target = older[-1]
    record = read_build_record(target) | {"rolled_back_from": current}
    publish(target, base)
    write_published_info(record, base)
    return record
