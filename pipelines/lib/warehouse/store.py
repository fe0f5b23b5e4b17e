"""The store of builds: publishing a finished build (atomically), the record of what is published, republishing
when the published file is damaged, pruning kept builds, rolling back to a kept build, and the record of the kept
builds verified finished (`verified.json`).

`build/` makes builds and calls the store twice per build: `prepare` before (under the build lock: leftovers
removed, a damaged published file replaced, what is published and verified), `commit` after (publish, record,
prune). This module is the only one that puts a build in place, and it never imports the build
(`.importlinter`).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipelines.lib.io.files import atomic_write
from pipelines.lib.io.jsonsafe import dumps_strict
from pipelines.lib.io.paths import builds_dir, ensure_inside, published_db, warehouse_dir
from pipelines.lib.warehouse.query import quote_ident

PUBLISHED_INFO = "published.json"
# What earlier builds of this warehouse proved, so a build need not prove it again (see _read_verified).
VERIFIED_INFO = "verified.json"
KEEP_BUILDS = 5


def file_signature(path: Path) -> list[int]:
    """A build file never changes once finished: the same inode, size and mtime is the same file."""
    stat = path.stat()
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns]


def read_published_info(base: Path | None = None) -> dict | None:
    """builds/published.json: the published build's name, fingerprint, time and row counts."""
    try:
        return json.loads((builds_dir(base) / PUBLISHED_INFO).read_text())
    except (OSError, ValueError):
        return None


def write_published_info(record: dict, base: Path | None = None) -> None:
    atomic_write(builds_dir(base) / PUBLISHED_INFO, lambda tmp: tmp.write_text(dumps_strict(record, indent=2)))


def published_build(base: Path | None = None) -> dict | None:
    """What the published file itself says it is: {"build", "built_at", "fingerprint", "excluded_rounds"}; None
    when nothing is published. published.json is written after the file is renamed into place, so a kill in
    between leaves it naming the previous build: whoever must know what is published (status, rollback) asks
    the file. "build" is the kept build the file is a hard link of (publish links it), else the kept build whose
    `_build_info` is the same, else None (a build no longer kept). A file that does not open raises duckdb.Error."""
    target = published_db(base)
    if not target.exists():
        return None
    build = _build_file_of(target, base)
    # opened by the build's own name: DuckDB caches open files by path, and the published name changes content
    con = duckdb.connect(str(build or target), read_only=True)
    try:
        built_at, fingerprint, excluded = build_stamp(con)
    finally:
        con.close()
    if build is None:  # a copy, not a link (publish's fallback): the kept build with the same stamp
        build = next((path for path in reversed(list_builds(base)) if _build_stamp(path) == (built_at, fingerprint)),
                     None)
    return {"build": build.name if build else None, "built_at": built_at, "fingerprint": fingerprint,
            "excluded_rounds": excluded}


def _build_file_of(target: Path, base: Path | None) -> Path | None:
    """The kept build `target` is a hard link of (the same file), if any."""
    try:
        inode = target.stat().st_ino
        return next((path for path in list_builds(base) if path.stat().st_ino == inode), None)
    except OSError:
        return None


def _build_stamp(path: Path) -> tuple | None:
    try:
        con = duckdb.connect(str(path), read_only=True)
        try:
            return con.execute("select built_at, fingerprint from _build_info").fetchone()
        finally:
            con.close()
    except duckdb.Error:
        return None



def publish(build_path: Path, base: Path | None = None) -> Path:
    """Atomically make `build_path` the published warehouse (hard link, else copy, then rename)."""
    target = published_db(base)
    tmp = ensure_inside(target.with_name(f".{target.name}.{os.getpid()}.tmp"), base)
    tmp.unlink(missing_ok=True)
    try:
        os.link(build_path, tmp)
    except OSError:
        shutil.copyfile(build_path, tmp)
    os.replace(tmp, target)
    return target



def list_builds(base: Path | None = None) -> list[Path]:
    return sorted(builds_dir(base).glob("mlperf-*.duckdb"))



def prune_builds(base: Path | None, keep: int) -> None:
    for old in list_builds(base)[:-keep]:
        old.unlink(missing_ok=True)

def finished_build_error(target: Path, verified: dict[str, list[int]] | None = None) -> str | None:
    """None if `target` opens and holds a finished build (`_build_info`); else why not."""
    if verified:
        try:
            if file_signature(target) in verified.values():
                return None
        except OSError:
            pass
    try:
        con = duckdb.connect(str(target), read_only=True)
        try:
            con.execute("select built_at from _build_info").fetchone()
        finally:
            con.close()
    except Exception as exc:  # duckdb raises several kinds for a damaged file
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return None


def complete_builds(base: Path | None = None) -> list[Path]:
    """Kept builds that finished: a build killed part-way has no `_build_info` (or left a WAL behind)."""
    return [path for path in list_builds(base)
            if not path.with_name(path.name + ".wal").exists() and finished_build_error(path) is None]


def build_stamp(con: duckdb.DuckDBPyConnection, database: str | None = None) -> tuple[object, str, dict]:
    """A build's (built_at, fingerprint, excluded rounds) from its `_build_info`, on `con`'s default database or
    the attached `database`."""
    table = f"{quote_ident(database)}.main._build_info" if database else "_build_info"
    built_at, fingerprint = con.execute(f"select built_at, fingerprint from {table}").fetchone()
    try:  # builds before the rounds' exclusion was recorded have no such column
        excluded = json.loads(con.execute(f"select excluded_rounds from {table}").fetchone()[0] or "{}")
    except duckdb.Error:
        excluded = {}
    return built_at, fingerprint, excluded


def read_build_record(path: Path) -> dict:
    """A kept build's published.json record (name, fingerprint, build time, row counts, the rounds whose
    new data it left out), read from the file."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        built_at, fingerprint, excluded = build_stamp(con)
        names = [n for (n,) in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main' order by 1").fetchall()]
        counts = {n: con.execute(f"select count(*) from {quote_ident(n)}").fetchone()[0] for n in names}
    finally:
        con.close()
    return {"fingerprint": fingerprint, "build": path.name, "built_at": built_at, "row_counts": counts,
            "excluded_rounds": excluded}


def current_build(base: Path | None = None) -> str | None:
    """The name of the published build: the published file's own (`published_build`), else, for a file that does
    not open or is no kept build, what published.json names."""
    try:
        name = (published_build(base) or {}).get("build")
    except Exception:  # noqa: BLE001  - duckdb raises several kinds for a damaged file
        name = None
    return name or (read_published_info(base) or {}).get("build")


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
    current = current_build(base)
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


# --- the verified-build record, and what a build finds before it starts ------------------------------------------


def _read_verified(base: Path) -> dict:
    """builds/verified.json: `builds` maps each kept build found finished (it opened and held
    `_build_info`) to its `file_signature` then; `dependencies` holds the `dependency_digest` of every
    model whose header matched its SQL. Opening each kept build and re-parsing every model cost more
    than the build's own SQL; a file whose signature changed (truncated, replaced) is opened again."""
    try:
        record = json.loads((builds_dir(base) / VERIFIED_INFO).read_text())
        return record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_verified(base: Path, builds: dict[str, list[int]], dependencies: set[str]) -> None:
    record = {"builds": builds, "dependencies": sorted(dependencies)}
    atomic_write(builds_dir(base) / VERIFIED_INFO, lambda tmp: tmp.write_text(json.dumps(record, indent=1)))


def _verified_builds(base: Path) -> dict[str, list[int]]:
    """Kept builds known finished, by name, whose file is still the one that was verified."""
    known = _read_verified(base).get("builds") or {}
    found = {}
    for path in list_builds(base):
        try:
            if known.get(path.name) == file_signature(path) and not path.with_name(path.name + ".wal").exists():
                found[path.name] = known[path.name]
        except OSError:
            continue
    return found


def published_opens(base: Path | None = None, verified: dict[str, list[int]] | None = None) -> str | None:
    """None if the published file opens and holds a finished build; else why not. A published file
    that is (hard link of) a build in `verified`, unchanged since, is not opened again."""
    return finished_build_error(published_db(base), verified)


def republish_if_damaged(base: Path, verified: dict[str, list[int]] | None = None) -> dict | None:
    """A published file that does not open is replaced by the newest kept build that does."""
    if not published_db(base).exists() or published_opens(base, verified) is None:
        return None
    for candidate in reversed(complete_builds(base)):
        record = read_build_record(candidate) | {"republished_because": "published file did not open"}
        publish(candidate, base)
        write_published_info(record, base)
        return record
    return None


def remove_unfinished_builds(base: Path) -> dict[str, list[int]]:
    """Under the build lock no build is running, so a WAL file or a build without `_build_info`
    is what a killed or failed build left behind (a WAL would also block opening its file).
    Returns the kept builds known finished, by name, with their `file_signature`."""
    for wal in [*builds_dir(base).glob("*.wal"), published_db(base).with_name(published_db(base).name + ".wal")]:
        if wal.exists():
            wal.unlink()
    published = published_db(base)
    published_inode = published.stat().st_ino if published.exists() else None
    verified = _verified_builds(base)
    newly_verified = False
    for path in list_builds(base):
        if path.name in verified:
            continue
        if finished_build_error(path) is None:  # finished, but not yet in verified.json
            verified[path.name] = file_signature(path)
            newly_verified = True
        elif path.stat().st_ino != published_inode:
            path.unlink(missing_ok=True)
    if newly_verified:  # kept for refreshes that then skip the build (inputs unchanged)
        _write_verified(base, verified, set(_read_verified(base).get("dependencies") or ()))
    return verified


@dataclass(frozen=True)
class StoreState:
    """What the store holds when a build starts (`prepare`): the kept builds known finished (name →
    `file_signature`), published.json ({} when none), the `dependency_digest` of every model verified before,
    and whether the published file exists, opens and holds a finished build."""

    verified: dict[str, list[int]]
    published: dict
    dependencies: frozenset[str]
    published_ok: bool


def prepare(base: Path) -> StoreState:
    """Under the build lock, before a build: the leftovers of a killed or failed build removed, a published
    file that does not open replaced by the newest kept build that does, then what the build needs to know."""
    verified = remove_unfinished_builds(base)
    republish_if_damaged(base, verified)
    return StoreState(verified, read_published_info(base) or {},
                      frozenset(_read_verified(base).get("dependencies") or ()),
                      published_db(base).exists() and published_opens(base, verified) is None)


def commit(base: Path, build_path: Path, record: dict, keep: int, verified: dict[str, list[int]],
           dependencies: set[str]) -> bool:
    """Under the build lock, after a build: publish the finished build `build_path` with its published.json
    `record`, keep the newest `keep` builds, and record it verified (`verified`: the kept builds `prepare`
    found; `dependencies`: the digests of the models it checked). False, with nothing done, when the published
    build is newer than `build_path`."""
    target = published_db(base)
    newer = (read_published_info(base) or {}).get("build")
    if newer and newer > build_path.name and target.exists():
        # Builds are serialized by the lock, so this only happens after a clock step back; never
        # let an older build replace a newer published one.
        return False
    publish(build_path, base)
    write_published_info(record, base)
    prune_builds(base, keep)
    kept = {p.name for p in list_builds(base)}
    verified = {name: sig for name, sig in verified.items() if name in kept}
    verified[build_path.name] = file_signature(build_path)
    _write_verified(base, verified, dependencies)
    return True
