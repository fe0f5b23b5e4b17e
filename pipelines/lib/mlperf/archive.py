"""Read a results archive member by member, without unpacking it to disk.

Only regular files are read; absolute names, `..`, links and devices are refused (reported, never
followed). The archive's top folder is stripped whatever its name.

Bounded whatever the archive holds: a member over its size limit is refused (quarantined with the
limit named) without being read; result logs are read as a stream, line by line, and only the
lines that can hold MLPerf log records are kept (a 2 GiB zero-filled member costs no memory); a
line over the line limit refuses the member; an archive over its total decompressed limit fails
with one line. JSON members are read whole, so their limit is smaller. Other text (Inference's LoadGen
summaries and detail logs) goes to the caller's reader, which streams it (`complete_lines`). A path
the archive holds twice is read once: the second member is refused, naming the path.
"""

from __future__ import annotations

import hashlib
import re
import tarfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

try:  # pinned (pyproject.toml); plain zlib where it is not installed
    from isal import igzip as _igzip
    from isal import isal_zlib as _isal_zlib
    _ISAL_ERRORS: tuple[type[Exception], ...] = (_isal_zlib.error,)
except ImportError:  # pragma: no cover
    _igzip, _ISAL_ERRORS = None, ()

from pipelines.lib.io.limits import human, limit
from pipelines.lib.mlperf.mllog import LOG_TOKEN_PREFIX, FilteredLog
from pipelines.lib.mlperf.power import POWER_FILE
from pipelines.lib.mlperf.precision import config_line_starts


class ArchiveError(Exception):
    """The archive as a whole cannot be read (not gzip, truncated, corrupt)."""


@dataclass(frozen=True)
class Member:
    path: str  # relative to the archive's top folder, e.g. "NVIDIA/results/dgx/bert/result_0.txt"
    # JSON: its bytes; a result log: its FilteredLog; with iter_members' read_text, what that returned; None for
    # refused members
    data: Any
    refused: str | None = None  # why a member was refused


# The v0.5 repository keeps everything below a round folder: `v0.5.0/<submitter>/<entry>/results/...`,
# sometimes with one more folder between the entry and `results` (Google: `cloud_v2.8/ssd-tpuv2-8/`).
ROUND_FOLDER = re.compile(r"^v\d+\.\d+(\.\d+)?$")

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
    """Members the warehouse reads: result logs, JSON beside them, system descriptions, and the power
    logs of power submissions (`<benchmark>/power/<result>/node_*.txt`, `sw_*.txt`)."""
    if len(parts) >= 3 and parts[1] == "systems":
        return len(parts) == 3 and parts[2].endswith(".json")
    i = results_folder_index(parts)
    if i is not None and len(parts) >= i + 3:
        name = parts[-1]
        if len(parts) >= 3 and parts[-3] == "power" and POWER_FILE.match(name):
            return True
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


# Before `run_start` a log prints its configuration, where the training precision is stated
# (precision.py): those lines are kept too, up to `max_config_bytes` (limits.py).


def read_log_stream(fh: IO[bytes], name: str, max_line: int, tick: Callable[[], None] | None = None
                    ) -> FilteredLog | str:
    """The lines of a result log that hold a log token (and the configuration lines before
    `run_start` that may state its precision), with the count of physical lines (universal
    newlines, as `token_lines` counts them), or the reason the member is refused. `tick` is
    called before each read (a deadline)."""
    kept: list[bytes] = []
    physical = 0
    carry = b""
    config_budget = limit("max_config_bytes")  # 0 once run_start is seen
    digest = hashlib.sha256()  # the file as published: it identifies a log re-published elsewhere
    while True:
        if tick is not None:
            tick()
        chunk = fh.read(1 << 20)
        digest.update(chunk)
        buffer = carry + chunk
        if chunk and buffer.endswith(b"\r"):  # may be the first half of a \r\n split across reads
            buffer, held = buffer[:-1], b"\r"
        else:
            held = b""
        buffer = line_feeds(buffer)
        end = buffer.rfind(b"\n") + 1  # the complete lines; the rest waits for the next read
        region, carry = buffer[:end], (buffer[end:] + held if chunk else buffer[end:])
        physical += region.count(b"\n")
        if config_budget:  # the configuration, printed before run_start, may state the precision
            config, config_budget = _config_lines(region, config_budget)
            kept += config
        log_lines = _token_lines(region)
        if log_lines and max(map(len, log_lines)) > max_line:
            return _line_too_long(name, max_line)
        kept += log_lines
        if len(carry) > max_line:
            return _line_too_long(name, max_line)
        if not chunk:
            break
    if carry:
        physical += 1
        if LOG_TOKEN_PREFIX in carry:
            kept.append(carry)
    return FilteredLog(b"\n".join(kept), physical, digest.hexdigest())


def _token_lines(region: bytes) -> list[bytes]:
    """The lines of `region` (complete lines) holding the log token, in order, found by search: most
    lines of a log are training output, and splitting all of them costs more."""
    found, find, rfind = [], region.find, region.rfind
    at = find(LOG_TOKEN_PREFIX)
    while at >= 0:
        stop = find(b"\n", at)  # the region ends with a newline
        found.append(region[rfind(b"\n", 0, at) + 1:stop])
        at = find(LOG_TOKEN_PREFIX, stop)
    return found


def _config_lines(region: bytes, budget: int) -> tuple[list[bytes], int]:
    """The lines of `region` (complete lines) before `run_start` that hold a precision token and no
    log token, up to `budget` bytes; and the budget left (0 once run_start is reached)."""
    cut = region.find(b"run_start")
    head = (region if cut < 0 else region[:cut]).lower()
    found = []
    for start in sorted(config_line_starts(head)):
        line = region[start:region.find(b"\n", start)]
        if LOG_TOKEN_PREFIX not in line and len(line) <= budget:
            found.append(line)
            budget -= len(line)
    return found, (0 if cut >= 0 else budget)


def _line_too_long(name: str, max_line: int) -> str:
    return (f"refused archive member {name!r}: a line longer than the {human(max_line)} line limit "
            "(MLPERF_MAX_LINE_BYTES)")


class LineTooLong(ValueError):
    """A line of a streamed member passed its line limit (raised as soon as it does, the rest unread)."""


READ_BYTES = 1 << 20  # one read of a streamed member


def line_feeds(buffer: bytes) -> bytes:
    """`buffer` with universal newlines: each \r\n and each lone \r made a line feed."""
    if b"\r" not in buffer:
        return buffer
    if buffer.count(b"\r") == buffer.count(b"\r\n"):
        # every carriage return starts a \r\n: deleting them is one pass (replacing pairs costs a step per line)
        return buffer.translate(None, b"\r")
    return buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def complete_lines(fh: IO[bytes], max_line: int, digest=None, tick: Callable[[], None] | None = None
                   ) -> Iterator[bytes]:
    """A member read 1 MiB at a time, as regions of complete lines (universal newlines, each made a line feed;
    every region but the last ends with one), for the caller to scan at C speed. Memory: one read plus one line. Raises
    LineTooLong once a line passes `max_line` bytes; `digest` (hashlib) sees the bytes as published; `tick` is
    called before each read (a deadline)."""
    carry = b""
    while True:
        if tick is not None:
            tick()
        chunk = fh.read(READ_BYTES)
        if digest is not None:
            digest.update(chunk)
        buffer = carry + chunk
        held = b""
        if chunk and buffer.endswith(b"\r"):  # may be the first half of a \r\n split across reads
            buffer, held = buffer[:-1], b"\r"
        buffer = line_feeds(buffer)
        end = buffer.rfind(b"\n") + 1 if chunk else len(buffer)
        region, carry = buffer[:end], buffer[end:] + held
        if region:
            if _has_long_line(region, max_line):
                raise LineTooLong(max_line)
            yield region
        if len(carry) > max_line:
            raise LineTooLong(max_line)
        if not chunk:
            return


def _has_long_line(region: bytes, max_line: int) -> bool:
    """Whether a line of `region` is longer than `max_line`, at C speed: each search looks for the last newline
    within reach of the line's start, so two searches advance at least `max_line` bytes."""
    at, size = 0, len(region)
    while size - at > max_line:
        newline = region.rfind(b"\n", at, at + max_line + 1)
        if newline < 0:
            return True
        at = newline + 1
    return False


@contextmanager
def _open_tar(path: Path) -> Iterator[tarfile.TarFile]:
    """The archive for reading member by member. ISA-L inflates gzip about twice as fast as zlib; a
    file that is not gzip goes to tarfile's own "r:gz", so its error stays the same."""
    if _igzip is not None:
        with open(path, "rb") as fh:
            is_gzip = fh.read(2) == b"\x1f\x8b"
        if is_gzip:
            with _igzip.IGzipFile(path, "rb") as gz, tarfile.open(fileobj=gz, mode="r:") as tar:
                yield tar
            return
    with tarfile.open(path, mode="r:gz") as tar:
        yield tar


def iter_members(path: Path, accept: Callable[[tuple[str, ...]], bool] = wanted,
                 read_text: Callable[[IO[bytes], str], object] | None = None,
                 total_limit: str = "max_archive_total_bytes", tick: Callable[[], None] | None = None
                 ) -> Iterator[Member]:
    """The members `accept` admits (by their path below the top folder), bounded and checked. Result logs are
    read as their log lines (`read_log_stream`); with `read_text`, every non-JSON member is given to it instead
    (its file and path; it returns what Member.data holds), to be streamed within the member limit. `tick` is
    called for every member and every read of a result log (a deadline: it raises)."""
    max_member, max_json = limit("max_member_bytes"), limit("max_json_member_bytes")
    max_total, max_line = limit(total_limit), limit("max_line_bytes")
    seen: set[str] = set()  # the paths read: a tar may hold one twice (the second is refused)
    try:
        # A seekable gzip file ("r:gz", or "r:" over ISA-L's), not the stream mode "r|gz": skipping a refused
        # member then costs a bounded-memory seek through the gzip stream (1 GiB of zeros: seconds) instead of
        # quadratic re-buffering (minutes).
        with _open_tar(path) as tar:
            for info in tar:
                if tick is not None:
                    tick()
                if len(tar.members) > 10_000:  # tarfile remembers every header; millions of tiny members add up
                    tar.members.clear()
                if info.offset_data + info.size > max_total:
                    raise ArchiveError(f"archive {path.name} is over the {human(max_total)} total decompressed "
                                       f"limit (MLPERF_{total_limit.upper()}); not read further")
                name = info.name
                parts = tuple(p for p in name.split("/") if p not in ("", "."))
                rel = "/".join(parts[1:])
                unsafe = _unsafe(name)
                if unsafe is None and not (info.isfile() or info.isdir()):
                    unsafe = "link or special file" if (info.issym() or info.islnk()) else "not a regular file"
                if unsafe is not None:
                    yield Member(rel or name, None, f"refused archive member {name!r}: {unsafe}")
                    continue
                if not info.isfile() or not accept(tuple(parts[1:])):
                    continue
                if rel in seen:  # GitHub's archives hold a path once; which copy is real cannot be told
                    yield Member(rel, None, f"refused archive member {name!r}: the archive holds this path more "
                                            "than once; its first copy is read")
                    continue
                seen.add(rel)
                is_json = rel.endswith(".json")
                cap, setting = (max_json, "MLPERF_MAX_JSON_MEMBER_BYTES") if is_json else (max_member, "MLPERF_MAX_MEMBER_BYTES")
                if info.size > cap:  # the tar header's size is exactly what the member decompresses to
                    yield Member(rel, None, f"refused archive member {name!r}: {info.size} bytes decompressed, "
                                            f"over the {human(cap)} member limit ({setting})")
                    continue
                fh = tar.extractfile(info)
                if fh is None:
                    yield Member(rel, b"")
                elif is_json:
                    yield Member(rel, fh.read())
                elif read_text is not None:
                    yield Member(rel, read_text(fh, rel))
                else:
                    log = read_log_stream(fh, name, max_line, tick)
                    yield Member(rel, None, log) if isinstance(log, str) else Member(rel, log)
    except (tarfile.TarError, EOFError, zlib.error, OSError, *_ISAL_ERRORS) as exc:
        raise ArchiveError(f"cannot read archive {path.name}: {type(exc).__name__}: {exc}") from exc


def result_keys(parts: list[str]) -> tuple[str, str, list[str]] | None:
    """(submitter, system, the path below the system folder) of a member under a `results` folder.
    In the v0.5 layout the system key is `<entry>[/<folder>]/<system>`: Google names every system
    folder `tpu`, and Intel's entries repeat system names, so the folder alone is not a key."""
    i = results_folder_index(parts)
    if i is None or len(parts) < i + 3:
        return None
    if i == 1:
        return parts[0], parts[2], parts[3:]
    return parts[1], "/".join([*parts[2:i], parts[i + 1]]), parts[i + 2:]
