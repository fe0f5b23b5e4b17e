"""Copies of real shared rounds holding what nobody has seen: a new round name, a system copied under a new
name with an accelerator no table knows, a benchmark no ruleset knows. Written as GitHub serves an archive
(one top folder), so the pipeline reads them exactly like the real ones."""

from __future__ import annotations

import io
import json
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class SystemCopy:
    """Copy `submitter/results/<system>` (and its systems file) as `<new_system>`."""

    submitter: str
    system: str
    new_system: str
    accelerator: str | None = None  # the copy's accelerator_model_name (None: unchanged)
    benchmarks: dict[str, str] = field(default_factory=dict)  # benchmark folder → new name (logs follow)
    only_benchmarks: tuple[str, ...] = ()  # copy only these benchmark folders (empty: all)
    without: tuple[str, ...] = ()  # file names not copied (e.g. scaling.json: the logs alone)


def _renamed_log(data: bytes, benchmarks: dict[str, str]) -> bytes:
    for old, new in benchmarks.items():
        data = re.sub(rb'("key": "submission_benchmark", "value": ")' + re.escape(old.encode()) + rb'"',
                      rb"\g<1>" + new.encode() + rb'"', data)
    return data


def inject(source: Path, target: Path, *, round_name: str | None = None, copies: tuple[SystemCopy, ...] = (),
           drop_original: tuple[str, ...] = (), repository: str = "training_results",
           edit: Callable[[str, bytes], bytes] = lambda _path, data: data) -> Path:
    """Write `target` (.tar.gz): `source` with its top folder renamed for `round_name` (if given), plus each
    copy. `drop_original` removes members whose path below the top folder starts with one of these; `edit`
    gets each file's path below the top folder and content, and returns the content written."""
    with tarfile.open(source, "r:gz") as src, tarfile.open(target, "w:gz", compresslevel=1) as out:
        for info in src:
            top, _, rest = info.name.partition("/")
            new_top = f"{repository}_{round_name}-main" if round_name else top
            if any(rest.startswith(prefix) for prefix in drop_original):
                continue
            data = src.extractfile(info).read() if info.isfile() else None
            add_member(out, info, f"{new_top}/{rest}" if rest else new_top, None if data is None else edit(rest, data))
            if data is None:
                continue
            for copy in copies:
                added = _copied(copy, rest, data)
                if added is not None:
                    add_member(out, info, f"{new_top}/{added[0]}", edit(*added))
    return target


def _copied(copy: SystemCopy, rest: str, data: bytes) -> tuple[str, bytes] | None:
    results = f"{copy.submitter}/results/{copy.system}/"
    if rest.startswith(results):
        below = rest[len(results):]
        scale = ""
        if below.startswith(("strong/", "weak/")):  # the HPC layout: <system>/{strong,weak}/<benchmark>/
            scale, _, below = below.partition("/")
            scale += "/"
        benchmark, _, tail = below.partition("/")
        if copy.only_benchmarks and benchmark not in copy.only_benchmarks or tail.rsplit("/", 1)[-1] in copy.without:
            return None
        new_benchmark = copy.benchmarks.get(benchmark, benchmark)
        path = f"{copy.submitter}/results/{copy.new_system}/{scale}{new_benchmark}/{tail}"
        return path, _renamed_log(data, copy.benchmarks) if tail.endswith(".txt") else data
    if rest == f"{copy.submitter}/systems/{copy.system}.json":
        doc = json.loads(data)
        if copy.accelerator is not None:
            doc["accelerator_model_name"] = copy.accelerator
        doc["system_name"] = f"{doc.get('system_name', copy.system)} (copy)"
        return f"{copy.submitter}/systems/{copy.new_system}.json", json.dumps(doc, indent=1).encode()
    return None


def add_member(out: tarfile.TarFile, info: tarfile.TarInfo, name: str, data: bytes | None) -> None:
    """`info`'s member written under `name` with `data` (None: a folder or other non-file member)."""
    new = tarfile.TarInfo(name)
    new.type, new.mode, new.mtime = info.type, info.mode, info.mtime
    if data is None:
        out.addfile(new)
    else:
        new.size = len(data)
        out.addfile(new, io.BytesIO(data))
