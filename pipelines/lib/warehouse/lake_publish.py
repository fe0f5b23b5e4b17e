"""Publishing into the team catalog's DuckLake, and rolling it back: each is one snapshot, committed under the
catalog's advisory lock, after the leftovers of a killed writer are deleted (`lake.py` has the pieces)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb

from pipelines.lib.warehouse.catalog_lock import catalog_lock
from pipelines.lib.warehouse.lake import (
    AT,
    LAKE,
    attach,
    cleanup,
    commit,
    copy_relations,
    digests,
    published,
    relations,
)
from pipelines.lib.warehouse.query import quote_literal
from pipelines.lib.warehouse.store import build_stamp
from pipelines.lib.warehouse.team import TeamCatalog

BUILD = "mlperf_build"  # the verified build file, attached read-only while it is copied


@contextlib.contextmanager
def _writer_rights(catalog: TeamCatalog) -> Iterator[None]:
    """A user who may read the catalog but not write it (a reader's login) is told so in a line, not by the
    statement PostgreSQL refused."""
    try:
        yield
    except duckdb.Error as exc:
        if "permission denied" not in str(exc).lower():
            raise
        raise PermissionError(f"this user may read the team catalog {catalog.shown} but not write it: only its "
                              "owner (the refreshing machine's login) publishes and rolls back") from None


def _writer(catalog: TeamCatalog) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        attach(con, catalog, read_only=False)
    except BaseException:
        con.close()
        raise
    return con


def publish_build(catalog: TeamCatalog, build: Path, *, if_changed: bool = True) -> dict:
    """Copy the finished, tested build file `build` into the lake as one snapshot. `if_changed`: nothing is
    committed when the lake's newest publish is this build already. Returns the snapshot's record (with
    "snapshot", "published" and "cleanup")."""
    started = time.perf_counter()
    with catalog_lock(catalog.url, "refresh"), _writer_rights(catalog):
        con = _writer(catalog)
        try:
            leftovers = cleanup(con, catalog.keep_snapshots)  # a killed writer's files, before this one writes
            con.execute(f"attach {quote_literal(str(build))} as {BUILD} (read_only)")
            built_at, fingerprint, excluded = build_stamp(con, BUILD)
            info = {"built_at": str(built_at), "fingerprint": fingerprint, "excluded_rounds": excluded}
            history = published(con)
            last = history[-1] if history else None
            if if_changed and last and (last["record"].get("build"), last["record"].get("fingerprint")) == \
                    (build.name, info["fingerprint"]):
                return last["record"] | {"snapshot": last["snapshot"], "published": False, "cleanup": leftovers}
            wanted = relations(con, BUILD)
            new, counts = digests(con, BUILD, wanted)
            present = relations(con, LAKE)
            old = (last["record"].get("digests") or {}) if last else {}
            changed = {name for name in wanted if name not in present or old.get(name) != new[name]}
            record = {"kind": "refresh", "build": build.name, **info, "row_counts": counts, "digests": new,
                      "replaced": sorted(changed), "dropped": sorted(set(present) - set(wanted))}
            con.execute("begin transaction")
            copy_relations(con, BUILD, wanted, changed, present)
            commit(con, f"refresh: build {build.name} ({len(changed)} of {len(wanted)} relations replaced)", record)
            snapshot = published(con)[-1]["snapshot"]
            swept = cleanup(con, catalog.keep_snapshots)
        finally:
            con.close()
    return record | {"snapshot": snapshot, "published": True, "seconds": round(time.perf_counter() - started, 3),
                     "cleanup": {k: leftovers[k] if not isinstance(leftovers[k], list) else leftovers[k] + swept[k]
                                 for k in leftovers} if leftovers else swept}


def published_build_path(base: Path | None = None) -> Path | None:
    """The file of the locally published build (None: nothing published yet)."""
    from pipelines.lib.io.paths import builds_dir, published_db
    from pipelines.lib.warehouse.store import published_build

    own = published_build(base)
    if own is None:
        return None
    return builds_dir(base) / own["build"] if own.get("build") else published_db(base)


def publish_published(catalog: TeamCatalog, base: Path | None = None) -> dict | None:
    """After a refresh's build step: the local published build into the lake, unless the lake's newest publish is
    it already (the build was skipped and an earlier refresh published it). None when nothing is published
    locally."""
    build = published_build_path(base)
    return None if build is None else publish_build(catalog, build)


def _target(history: list[dict], to: str | None) -> dict:
    current = history[-1]
    if to:
        matches = [s for s in history if to in (str(s["snapshot"]), s["record"].get("build"),
                                                 (s["record"].get("build") or "").removesuffix(".duckdb"),
                                                 (s["record"].get("build") or "").removesuffix(".duckdb")
                                                 .removeprefix("mlperf-"))]
        if not matches:
            kept = ", ".join(f"{s['snapshot']} ({s['record'].get('build')})" for s in history)
            raise ValueError(f"no kept snapshot named {to!r}; kept: {kept or 'none'}")
        if matches[-1]["snapshot"] == current["snapshot"]:
            raise ValueError(f"no kept snapshot named {to!r} to roll back to: {to} is the current snapshot")
        return matches[-1]
    older = [s for s in history if (s["record"].get("build") or "") < (current["record"].get("build") or "")]
    if not older:
        raise ValueError(f"no kept snapshot of a build older than the published one ({current['record'].get('build')},"
                         f" snapshot {current['snapshot']}); nothing to roll back to")
    return older[-1]


def rollback_lake(catalog: TeamCatalog, to: str | None = None) -> dict:
    """Publish again, as a new snapshot, the newest kept snapshot of the build before the current one (or the
    snapshot `to`: its id or its build's name). Only the relations whose digest differs are copied."""
    started = time.perf_counter()
    with catalog_lock(catalog.url, "rollback"), _writer_rights(catalog):
        con = _writer(catalog)
        try:
            history = published(con)
            if not history:
                raise ValueError(f"nothing published in the team catalog {catalog.shown}; nothing to roll back to")
            current, target = history[-1], _target(history, to)
            cleanup(con, catalog.keep_snapshots + 1)  # a killed writer's files; the target stays
            attach(con, catalog, AT, read_only=True, snapshot=target["snapshot"])
            wanted, present = relations(con, AT), relations(con, LAKE)
            now, then = current["record"].get("digests") or {}, target["record"].get("digests") or {}
            changed = {name for name in wanted if name not in present or now.get(name) != then.get(name)
                       or name not in then}
            record = {k: v for k, v in target["record"].items() if k not in ("rolled_back_from", "to_snapshot")} | {
                "kind": "rollback", "to_snapshot": target["snapshot"], "rolled_back_from": current["record"].get("build"),
                "replaced": sorted(changed), "dropped": sorted(set(present) - set(wanted))}
            if not changed and not record["dropped"]:  # DuckLake commits no snapshot for no change
                raise ValueError(f"no kept snapshot named {to or target['snapshot']!r} to roll back to: snapshot "
                                 f"{target['snapshot']} holds what the current one holds")
            con.execute("begin transaction")
            copy_relations(con, AT, wanted, changed, present)
            commit(con, f"rollback to snapshot {target['snapshot']} (build {record.get('build')})", record)
            con.execute(f"detach {AT}")
            snapshot = published(con)[-1]["snapshot"]
            cleanup(con, catalog.keep_snapshots)
        finally:
            con.close()
    return record | {"snapshot": snapshot, "seconds": round(time.perf_counter() - started, 3)}


def describe_changes(previous: dict | None, record: dict) -> str:
    """What one publish changed, in a line: the relations replaced (with their row counts before → after),
    added and dropped."""
    if record.get("kind") == "rollback":
        head = f"rollback to snapshot {record.get('to_snapshot')} (was {record.get('rolled_back_from')}); "
    else:
        head = ""
    before = (previous or {}).get("row_counts") or {}
    after = record.get("row_counts") or {}
    replaced = [n for n in record.get("replaced") or [] if not n.startswith("_")]
    added = [n for n in replaced if n not in before]
    counted = []
    for name in replaced:
        if name in added:
            continue
        old, new = before.get(name), after.get(name)
        if old is not None and new is not None and old != new:
            counted.append(f"{name} {old:,} → {new:,} ({new - old:+,})")
    same_count = len(replaced) - len(added) - len(counted)
    parts = counted[:6] + ([f"{len(counted) - 6} more with new row counts"] if len(counted) > 6 else [])
    if same_count:
        parts.append(f"{same_count} rewritten with the same row count")
    if added:
        parts.append(f"added {', '.join(added[:6])}" + (f" and {len(added) - 6} more" if len(added) > 6 else ""))
    if record.get("dropped"):
        parts.append(f"dropped {', '.join(record['dropped'])}")
    return head + ("; ".join(parts) if parts else "no relation changed")


def team_status(catalog: TeamCatalog) -> dict:
    """The lake's kept publishes, newest first, each with what it changed; read-only, no lock."""
    from pipelines.lib.warehouse.lake import connect_lake, data_path

    with connect_lake(catalog) as con:
        history = published(con)
        where = data_path(con)
    snapshots, previous = [], None
    for entry in history:
        record = entry["record"]
        snapshots.append({"snapshot": entry["snapshot"], "at": entry["at"], "kind": record.get("kind"),
                          "build": record.get("build"), "built_at": record.get("built_at"),
                          "changes": describe_changes(previous, record)})
        previous = record
    return {"catalog": catalog.shown, "data_path": where, "current": snapshots[-1]["snapshot"] if snapshots else None,
            "snapshots": list(reversed(snapshots))}
