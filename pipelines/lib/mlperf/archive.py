"""Read a results archive member by member, without unpacking it to disk.

Only regular files are read; absolute names, `..`, links and devices are refused (reported, never
followed). The archive's top folder is stripped whatever its name.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator


class ArchiveError(Exception):
    """The archive as a whole cannot be read (not gzip, truncated, corrupt)."""


@dataclass(frozen=True)
class Member:
    path: str  # relative to the archive's top folder, e.g. "NVIDIA/results/dgx/bert/result_0.txt"
    data: bytes | None  # None for refused members
    refused: str | None = None  # why a member was refused


# The v0.5 repository keeps everything below a round folder: `v0.5.0/<submitter>/<entry>/results/...`,
# sometimes with one more folder between the entry and `results` (Google: `cloud_v2.8/ssd-tpuv2-8/`).
ROUND_FOLDER = re.compile(r"^v\d+\.\d+(\.\d+)?$")

# The layouts a round's result logs are looked for in (named in errors when a round has none).
RESULT_LAYOUTS = (
    "<submitter>/results/<system>/<benchmark>/result_*.txt",
    "vX.Y.Z/<submitter>/<entry>/[<folder>/]results/<system>/<benchmark>/result_*.txt",
)


def results_folder_index(parts: tuple[str, ...] | list[str]) -> int | None:
    """Where the `results` folder is in a member path: 1 in `<submitter>/results/...`; 3 or 4 in
    the v0.5 layout `vX.Y.Z/<submitter>/<entry>/[<folder>/]results/...` (2 if an entry has no folder
    of its own); None elsewhere."""
    if len(parts) >= 2 and parts[1] == "results":
        return 1
    if parts and ROUND_FOLDER.match(parts[0]):
        for i in (2, 3, 4):
            if len(parts) > i and parts[i] == "results":
                return i
    return None


def wanted(parts: tuple[str, ...]) -> bool:
    """Members the warehouse reads: result logs, JSON beside them, system descriptions."""
    if len(parts) >= 3 and parts[1] == "systems":
        return len(parts) == 3 and parts[2].endswith(".json")
    i = results_folder_index(parts)
    if i is not None and len(parts) >= i + 3:
        name = parts[-1]
        return (name.startswith("result_") and name.endswith(".txt")) or name.endswith(".json")
    return False


def top_folder(path: Path) -> str | None:
    """The name of the archive's top folder (GitHub's `training_results_vX.Y-<ref>`), from the first
    member's header only; None when the archive cannot be read (iter_members reports that)."""
    try:
        with tarfile.open(path, mode="r|gz") as tar:
            for info in tar:
                parts = [p for p in info.name.split("/") if p not in ("", ".")]
                return parts[0] if parts else None
    except (tarfile.TarError, EOFError, zlib.error, OSError):
        return None
    return None


def _unsafe(name: str) -> str | None:
    p = PurePosixPath(name)
    if name.startswith("/") or p.is_absolute():
        return "absolute member name"
    if ".." in p.parts:
        return "member name contains '..'"
    return None


def iter_members(path: Path) -> Iterator[Member]:
    try:
        with tarfile.open(path, mode="r|gz") as tar:
            for info in tar:
                name = info.name
                parts = tuple(p for p in name.split("/") if p not in ("", "."))
                rel = "/".join(parts[1:])
                unsafe = _unsafe(name)
                if unsafe is None and not (info.isfile() or info.isdir()):
                    unsafe = "link or special file" if (info.issym() or info.islnk()) else "not a regular file"
                if unsafe is not None:
                    yield Member(rel or name, None, f"refused archive member {name!r}: {unsafe}")
                    continue
                if not info.isfile() or not wanted(tuple(parts[1:])):
                    continue
                fh = tar.extractfile(info)
                yield Member(rel, fh.read() if fh is not None else b"")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise ArchiveError(f"cannot read archive {path.name}: {type(exc).__name__}: {exc}") from exc
