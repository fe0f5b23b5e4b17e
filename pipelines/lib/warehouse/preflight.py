"""Is there anything to refresh? Answered before Dagster starts, in a fraction of a second.

After a refresh in which every step succeeded, `record` writes a manifest: what was asked (rounds,
URL templates, prices, the settings), every source it fetched (URL and local copy), and
digests of the code, the staged files and the published build. The next refresh asking the same
is skipped when `unchanged_since_last_refresh` finds every source unchanged upstream (a 304 to a
conditional GET, or a local mirror file with the recorded size and modification time), the code,
staged files and published build exactly as recorded, and, with prices, today's price lists already
fetched. Anything it cannot prove unchanged means a full refresh.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

from pipelines.lib.io.files import atomic_write_text, file_stamp
from pipelines.lib.io.paths import builds_dir, published_db, staging_dir

MANIFEST = "last_full_refresh.json"
PREFLIGHT_CONNECTIONS = 8  # conditional GETs in flight at once (GitHub serves each archive from one host)
_CODE_PACKAGES = ("pipelines", "sql", "schemas")
_CODE_SUFFIXES = {".py", ".sql", ".csv", ".yaml", ".js", ".css"}


def _manifest_path(base: Path) -> Path:
    return staging_dir("_meta", base) / MANIFEST


def request_key(rounds: list[str], results_template: str, rules_template: str, prices: bool,
                settings: dict) -> dict:
    """What a refresh was asked to do, including every setting (`settings`: secrets only as whether they
    are set, as `Settings.fingerprint` gives them)."""
    return {"rounds": list(rounds), "results_template": results_template, "rules_template": rules_template,
            "prices": prices, "settings": settings}


def _code_digest() -> str:
    digest = hashlib.sha256(metadata.version("mlperf-logging").encode())
    for package in _CODE_PACKAGES:
        # found without importing it: importing `schemas` would load Pandera (half a second)
        root = Path(next(iter(find_spec(package).submodule_search_locations)))
        for path in sorted(root.rglob("*")):
            if path.suffix in _CODE_SUFFIXES and "__pycache__" not in path.parts:
                digest.update(f"{path.relative_to(root)}\n".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _tree_digest(directory: Path, skip: str | None = None) -> str:
    """Names, sizes and modification times of every file below `directory` (files are replaced whole)."""
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")) if directory.exists() else []:
        if path.is_file() and (skip is None or skip not in path.parts):
            digest.update(file_stamp(path, directory).encode())
    return digest.hexdigest()


def _published_digest(base: Path) -> str | None:
    target, info = published_db(base), builds_dir(base) / "published.json"
    if not target.exists() or not info.exists():
        return None
    stat = target.stat()
    return hashlib.sha256(f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}:".encode() + info.read_bytes()).hexdigest()


def _state(base: Path) -> dict:
    return {"code": _code_digest(), "staged": _tree_digest(staging_dir("", base), skip="_meta"),
            "published": _published_digest(base)}


def record(base: Path, request: dict, sources: list[tuple[str, Path]], prices_day: str | None) -> Path:
    """Remember a refresh whose every step succeeded (call it after the publish)."""
    manifest = {"request": request, "prices_day": prices_day,
                "sources": [{"url": url, "path": str(Path(path).relative_to(base))} for url, path in sources],
                **_state(base)}
    path = _manifest_path(base)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, json.dumps(manifest, indent=2))


def forget(base: Path) -> None:
    """After a refresh that did not fully succeed, the next one always runs in full."""
    _manifest_path(base).unlink(missing_ok=True)


def unchanged_since_last_refresh(base: Path, request: dict) -> str | None:
    """None when nothing can have changed since the last full refresh; else why a refresh must run."""
    try:
        manifest = json.loads(_manifest_path(base).read_text())
    except (OSError, ValueError):
        return "no record of an earlier complete refresh"
    if manifest.get("request") != request:
        return "asked for other rounds, sources or settings than the last refresh"
    if request["prices"] and manifest.get("prices_day") != date.today().isoformat():
        return "today's price lists have not been fetched"
    if _state(base) != {k: manifest.get(k) for k in ("code", "staged", "published")}:
        return "the code, the staged files or the published build changed"
    from concurrent.futures import ThreadPoolExecutor

    from pipelines.lib.io.retry import make_session
    from pipelines.lib.io.sidecars import unchanged_upstream

    sources = manifest["sources"]
    # The conditional GETs wait on the network, not on this process: asked all at once (a few at a time),
    # one session per worker thread (a requests Session is not shared across threads).
    def check(source: dict) -> bool:
        with make_session() as session:
            return unchanged_upstream(source["url"], base / source["path"], session=session)

    with ThreadPoolExecutor(max_workers=min(PREFLIGHT_CONNECTIONS, max(len(sources), 1))) as pool:
        for source, unchanged in zip(sources, pool.map(check, sources), strict=True):
            if not unchanged:
                return f"changed upstream (or not verifiable): {source['url']}"
    return None
