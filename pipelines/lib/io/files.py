"""Writing files so that a reader sees the old content or the new, never half of it.

Everything is written to a hidden temp file beside its target (same filesystem, so the rename is
atomic) and renamed onto it; on any error the temp file is removed. Temp files of killed processes
match `TEMP_GLOB` and are swept by `pipelines.lib.io.locking.remove_stale_files`.

Text written with `atomic_write_text` (the records: download sidecars, the pre-flight manifest, the last
refresh, discovery and rules records) is written as `redaction.redact` leaves it: no configured secret and
no URL's credentials reach a record, whoever builds it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
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
    from pipelines.lib.io.redaction import redact

    clean = redact(text)
    return atomic_write(target, lambda tmp: tmp.write_text(clean, encoding="utf-8"))


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
    """A folder to build `out` in. Yields a new, empty folder; when the block ends without error the `marker`
    file is written into it and its content takes `out`'s place. `out` must be missing, empty, or a folder this
    command wrote (it holds `marker`; `legacy(out)` may vouch for folders written before markers): anything
    else is refused (ValueError) and left exactly as it is.

    The folder `out` itself is kept whenever a new one would differ from it: an existing empty folder (someone
    made it, maybe for a web server: its owner, group, mode and ACLs stay, and a mount point cannot be replaced
    anyway), or one whose owner, group or mode this process cannot give a new folder. Then the new content is
    built in a hidden folder inside `out` and moved into place entry by entry. Otherwise the folder is built
    beside `out`, given `out`'s mode and group, and swapped in whole (`replace_directory`)."""
    out = Path(out).resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file, not a folder: choose another --out")
    # Hidden folders an earlier run of this command left inside `out` when it was killed do not count.
    leftovers = f"{marker}."  # the marker is a hidden name: `.mlperf-warehouse-site.work-…`
    content = [p for p in out.iterdir() if not p.name.startswith(leftovers)] if out.exists() else []
    if content and not (out / marker).is_file() and not (legacy and legacy(out)):
        raise ValueError(f"{out} is not empty and was not written by `mlperf-warehouse {command}` (no {marker} "
                         "marker); refusing to replace it: choose another --out")
    in_place = out.exists() and (not content or os.path.ismount(out) or not _recreatable(out))
    if in_place:
        work = out / f"{leftovers}work-{secrets.token_hex(4)}"
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        work = out.with_name(f".{out.name}.{command}-{secrets.token_hex(4)}")
    try:
        work.mkdir()
    except PermissionError:
        raise ValueError(f"{work.parent} is not writable by this user: choose another --out") from None
    try:
        yield work
        (work / marker).write_text(f"written by mlperf-warehouse {command}; the next {command} into this folder "
                                   "replaces its content\n")
        if in_place:
            _move_content(work, out, marker, leftovers)
        elif not _same_folder(work, out):  # its group or mode could not be given: keep the folder itself
            _move_content(work, out, marker, leftovers)
        else:
            replace_directory(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _recreatable(folder: Path) -> bool:
    """Whether a folder made by this process can be what `folder` is: only its owner can make one it owns."""
    return folder.stat().st_uid == os.geteuid()


def _same_folder(new: Path, out: Path) -> bool:
    """Give `new` the mode and group of `out` (when `out` exists); True if it now has them (the kernel drops a
    setgid bit, and refuses a group, that this process may not set)."""
    if not out.exists():
        return True
    wanted = out.stat()
    try:
        if new.stat().st_gid != wanted.st_gid:
            os.chown(new, -1, wanted.st_gid)
        os.chmod(new, stat.S_IMODE(wanted.st_mode))
    except OSError:
        return False
    got = new.stat()
    return (got.st_gid, stat.S_IMODE(got.st_mode)) == (wanted.st_gid, stat.S_IMODE(wanted.st_mode))


def _move_content(work: Path, out: Path, marker: str, leftovers: str) -> None:
    """Replace what `out` holds by what `work` (a folder inside `out`, or beside it) holds, keeping `out` itself:
    the previous content is moved aside first, the marker comes first (a run killed part-way leaves a folder
    the next run recognises as its own), every move a rename."""
    old = out / f"{leftovers}old-{secrets.token_hex(4)}"
    old.mkdir()
    for entry in out.iterdir():
        if entry not in (work, old):
            os.replace(entry, old / entry.name)
    for entry in sorted(work.iterdir(), key=lambda e: e.name != marker):
        os.replace(entry, out / entry.name)
    shutil.rmtree(old, ignore_errors=True)


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
