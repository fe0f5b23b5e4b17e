"""Publishing a finished build (atomically), the record of what is published, and rolling back to a
kept build. `build.py` makes builds; this module is the only one that puts one in place."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb

from pipelines.lib.io.files import atomic_write
from pipelines.lib.io.jsonsafe import dumps_strict
from pipelines.lib.io.paths import builds_dir, ensure_inside, published_db, warehouse_dir
from pipelines.lib.warehouse.query import quote_ident

PUBLISHED_INFO = "published.json"


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
        built_at, fingerprint = con.execute("select built_at, fingerprint from _build_info").fetchone()
        try:  # builds before the rounds' exclusion was recorded have no such column
            excluded = json.loads(con.execute("select excluded_rounds from _build_info").fetchone()[0] or "{}")
        except duckdb.Error:
            excluded = {}
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



def published_fingerprint(base: Path | None = None) -> str | None:
    return (read_published_info(base) or {}).get("fingerprint")



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
