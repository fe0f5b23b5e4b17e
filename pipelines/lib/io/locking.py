"""One refresh at a time per warehouse directory, and one build/publish at a time.

`flock` locks: the kernel releases them when the holding process dies, so a killed refresh never
leaves a stale lock. A second refresh on the same directory exits at once with a message naming
the running one (it does not queue behind it: a refresh scheduled twice should not run twice). A
build waits for another build in progress (builds take seconds), then re-checks what to do.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pipelines.lib.io.files import TEMP_GLOB

REFRESH_LOCK = ".refresh.lock"
BUILD_LOCK = ".build.lock"


class WarehouseBusy(Exception):
    """Another refresh holds the warehouse directory."""


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info.get('pid')}, started {info.get('started')}"
    except (OSError, ValueError):
        return "unknown process"


@contextlib.contextmanager
def exclusive(path: Path, *, wait: bool, what: str, on_wait: Callable[[str], None] = lambda _: None) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) for the `with` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            message = f"another {what} ({_holder(fd)}) is running on {path.parent}"
            if not wait:
                raise WarehouseBusy(f"{message}; this one does nothing (try again when it has finished)") from None
            on_wait(f"{message}; waiting for it to finish ...")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "started": datetime.now(UTC).isoformat(
            timespec="seconds")}).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def refresh_lock(base: Path) -> contextlib.AbstractContextManager:
    """Held for a whole refresh; a second refresh on `base` raises WarehouseBusy at once."""
    return exclusive(Path(base) / REFRESH_LOCK, wait=False, what="refresh")


def build_lock(builds: Path, on_wait: Callable[[str], None] = lambda _: None) -> contextlib.AbstractContextManager:
    """Held while a build is made and published (or rolled back); others wait."""
    return exclusive(Path(builds) / BUILD_LOCK, wait=True, what="build", on_wait=on_wait)


STALE_SECONDS = 300  # a download in progress writes far more often (the minimum rate's window is 60 s)


# Earlier releases downloaded into `<name>.part-<random>` beside the target; a killed one
# may have left such files in a warehouse this release now manages.
LEGACY_DOWNLOAD_TEMP_GLOB = "raw/**/*.part-*"


def remove_stale_files(base: Path, now: float | None = None) -> list[Path]:
    """Leftovers of killed or failed runs: temp files of downloads and atomic writes (`files.TEMP_GLOB`)
    untouched for STALE_SECONDS. (Unfinished builds and WAL files are removed by the build
    itself, under the build lock.) Returns what was removed."""
    now = now or time.time()
    removed = []
    for pattern in (f"raw/**/{TEMP_GLOB}", f"staging/**/{TEMP_GLOB}", f"builds/{TEMP_GLOB}", TEMP_GLOB,
                    LEGACY_DOWNLOAD_TEMP_GLOB):
        for path in Path(base).glob(pattern):
            try:
                if path.is_file() and now - path.stat().st_mtime > STALE_SECONDS:
                    path.unlink()
                    removed.append(path)
            except OSError:
                pass
    return removed
