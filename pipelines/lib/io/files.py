"""Writing files so that a reader sees the old content or the new, never half of it.

Everything is written to a hidden temp file beside its target (same filesystem, so the rename is
atomic) and renamed onto it; on any error the temp file is removed. Temp files of killed processes
match `TEMP_GLOB` and are swept by `pipelines.lib.io.locking.remove_stale_files`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

TEMP_SUFFIX = ".tmp"
TEMP_GLOB = f".*{TEMP_SUFFIX}"


def temp_path(target: Path) -> Path:
    """A fresh hidden name beside `target`: `.<name>.<random>.tmp`."""
    target = Path(target)
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}")


@contextlib.contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """Yields a temp path to write; when the block ends without error it is renamed onto `target`."""
    tmp = temp_path(target)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write(target: Path, write: Callable[[Path], object]) -> Path:
    """`write(temp_path)` beside `target`, then rename onto it."""
    with replacing(target) as tmp:
        write(tmp)
    return Path(target)


def atomic_write_bytes(target: Path, data: bytes) -> Path:
    return atomic_write(target, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(target: Path, text: str) -> Path:
    return atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def create_file(target: Path, data: bytes) -> bool:
    """Create `target` holding `data`, written beside it and hard-linked into place: never half a file, and
    never over an existing one (False when `target` exists)."""
    if target.exists():
        return False
    tmp = temp_path(target)
    try:
        tmp.write_bytes(data)
        os.link(tmp, target)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def owned_directory(out: Path, marker: str, command: str,
                    legacy: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """A folder built beside `out` that then replaces it whole. Yields the new, empty folder; when the block
    ends without error the `marker` file is written into it and it takes `out`'s place. `out` must be
    missing, empty, or a folder this command wrote (it holds `marker`; `legacy(out)` may vouch for folders
    written before markers): anything else is refused (ValueError) and left exactly as it is."""
    out = Path(out).resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file, not a folder: choose another --out")
    if out.exists() and any(out.iterdir()) and not (out / marker).is_file() and not (legacy and legacy(out)):
        raise ValueError(f"{out} is not empty and was not written by `mlperf-warehouse {command}` (no {marker} "
                         "marker); refusing to replace it: choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.with_name(f".{out.name}.{command}-{secrets.token_hex(4)}")
    work.mkdir()
    try:
        yield work
        (work / marker).write_text(f"written by mlperf-warehouse {command}; the next {command} into this folder "
                                   "replaces it whole\n")
        replace_directory(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def rebased(path: Path, work: Path, out: Path) -> Path:
    """Where a file written into `owned_directory`'s `work` folder lives once the folder is in place."""
    return Path(out).resolve() / Path(path).relative_to(work)


def replace_directory(new: Path, out: Path) -> None:
    """Put the finished directory `new` in place of `out`. Readers of `out` see the whole previous
    directory or the whole new one; between the two renames `out` is briefly absent."""
    old = out.with_name(f".{out.name}.old-{secrets.token_hex(4)}")
    if out.exists():
        os.replace(out, old)
    os.replace(new, out)
    shutil.rmtree(old, ignore_errors=True)


def file_stamp(path: Path, base: Path) -> str:
    """A file's name below `base`, size and modification time: enough to tell a change to a file that is
    only ever replaced whole (staged Parquet, downloads)."""
    stat = path.stat()
    return f"{path.relative_to(base)}:{stat.st_size}:{stat.st_mtime_ns}\n"
