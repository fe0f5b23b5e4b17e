"""The RCP checker reimplemented (pipelines.lib.mlperf.rcp) against what MLCommons' summarizer printed: for
every closed-division result of every shared round with RCPs (Training from v1.0, HPC v1.0 and v3.0), the
detailed summary's `RCP`, `GBS` and `samples_to_converge` columns. `official/` is today's scorer (the
installed mlperf-logging package's checker source and RCP files); `official_era/v6.0` is 6.0.0-rc6's, read
from its archive. Archives are read as streams, once each, never extracted."""

from __future__ import annotations

import csv
import json
import tarfile
from collections import defaultdict
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath

import pytest

from pipelines.lib.mlperf import rcp, rcp_convergence, rcp_records, rcp_semantics
from pipelines.lib.mlperf.mllog import MLLOG, parse_log
from pipelines.lib.mlperf.rounds import round_sort_key
from support.paths import SHARED_MLPERF, needs_shared_mlperf

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared]
COLUMNS = ("RCP", "GBS", "samples_to_converge")


@dataclass(frozen=True)
class Suite:
    usage: str
    archives: Path  # folder of `<usage>_results_vX.Y-main.tar.gz`
    summaries: Path  # folder of the official `[hpc_]vX.Y_summary_detailed.csv`
    summary_prefix: str
    level: tuple[str, ...]  # folders between a system and its benchmarks (HPC: strong scaling)


TRAINING = Suite("training", SHARED_MLPERF, SHARED_MLPERF / "official", "", ())
HPC = Suite("hpc", SHARED_MLPERF / "hpc", SHARED_MLPERF / "official" / "hpc", "hpc_", ("strong",))


def archive_path(suite: Suite, version: str) -> Path:
    return suite.archives / f"{suite.usage}_results_{version}-main.tar.gz"


def summary_path(suite: Suite, version: str) -> Path:
    return suite.summaries / f"{suite.summary_prefix}{version}_summary_detailed.csv"


def shared_rounds(suite: Suite) -> list[str]:
    """Rounds from v1.0 (the first with RCPs) with both an archive and the official detailed summary."""
    prefix = f"{suite.usage}_results_"
    versions = [p.name.removeprefix(prefix).removesuffix("-main.tar.gz") for p in suite.archives.glob(f"{prefix}v*-main.tar.gz")]
    return sorted((v for v in versions if round_sort_key(v) >= (1, 0) and summary_path(suite, v).exists()), key=round_sort_key)


@dataclass
class Round:
    """One archive as the summarizer sees it: system descriptions and each benchmark folder's result logs,
    reduced to the lines the RCP checker reads (`rcp_convergence.rcp_lines`)."""

    systems: dict[tuple[str, str], dict] = field(default_factory=dict)  # (submitter folder, system) → description
    folders: dict[tuple[str, str, str], dict[str, list[str]]] = field(default_factory=lambda: defaultdict(dict))


@cache
def read_round(suite: Suite, version: str) -> Round:
    found = Round()
    depth = 5 + len(suite.level)  # submitter/results/system/[strong/]benchmark/result_N.txt
    with tarfile.open(archive_path(suite, version), mode="r|gz") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts[1:]  # below the archive's top folder
            if not member.isfile() or len(parts) < 3:
                continue
            if len(parts) == 3 and parts[1] == "systems" and parts[2].endswith(".json"):
                try:
                    found.systems[(parts[0], parts[2][:-5])] = json.loads(tar.extractfile(member).read())
                except ValueError:
                    pass  # the summarizer skips a system it cannot read
            elif (len(parts) == depth and parts[1] == "results" and parts[3:3 + len(suite.level)] == suite.level
                  and fnmatchcase(parts[-1], "result_*.txt")):
                found.folders[(parts[0], parts[2], parts[-2])][parts[-1]] = rcp_convergence.rcp_lines(
                    tar.extractfile(member).read())
    return found


def installed_release() -> tuple[rcp_semantics.RcpSemantics, dict[str, str]]:
    root = resources.files("mlperf_logging.rcp_checker")
    files = {f"{folder.name}/{p.name}": p.read_text() for folder in root.iterdir() if folder.is_dir()
             for p in folder.iterdir() if p.name.startswith("rcps_") and p.name.endswith(".json")}
    return rcp_semantics.RcpSemantics.from_checker_source(root.joinpath("rcp_checker.py").read_text()), files


def archived_release(path: Path) -> tuple[rcp_semantics.RcpSemantics, dict[str, str]]:
    """A mlcommons/logging archive's rcp_checker.py and RCP files, read as a stream."""
    source, files = None, {}
    with tarfile.open(path, mode="r|gz") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts[1:]
            if not member.isfile() or parts[:2] != ("mlperf_logging", "rcp_checker"):
                continue
            if parts[2:] == ("rcp_checker.py",):
                source = tar.extractfile(member).read().decode()
            elif len(parts) == 4 and parts[3].startswith("rcps_") and parts[3].endswith(".json"):
                files["/".join(parts[2:])] = tar.extractfile(member).read().decode()
    assert source is not None and files, f"{path.name} holds no rcp_checker"
    return rcp_semantics.RcpSemantics.from_checker_source(source), files


def benchmark_alias(folder: str) -> str:
    """The summarizer's `_benchmark_alias`: the column a benchmark folder fills."""
    return "maskrcnn" if folder == "mask" else folder


def computed_rows(found: Round, usage: str, version: str, release: tuple[rcp_semantics.RcpSemantics, dict[str, str]]) -> dict:
    """(submitter, system) → [benchmark → the three columns as the summarizer fills them], closed systems
    only; and, log by log, the project's parsed lines read as the checker's text lines."""
    semantics, files = release
    ruleset = version[1:] + ".0"
    tables = rcp_records.rcp_tables(files, usage, ruleset, semantics)
    by_system: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for (submitter, system, folder), logs in sorted(found.folders.items()):
        desc = found.systems.get((submitter, system))
        if desc is None or desc.get("division") != "closed":
            continue
        runs = []
        for name in sorted(logs):
            run = rcp_convergence.run_convergence(logs[name], semantics, ruleset, benchmark_hint=folder)
            parsed = parse_log("\n".join(logs[name]).encode("latin-1"), MLLOG).lines
            assert rcp_convergence.run_convergence(parsed, semantics, ruleset, benchmark_hint=folder) == run, \
                (submitter, system, name)
            runs.append(run)
        verdict = rcp.check_result(runs, tables, benchmark_folder=folder)
        columns = by_system[(submitter, system)].setdefault(benchmark_alias(folder), {})
        # the summarizer sets a column only when it has a value (a later folder of the same alias keeps the rest)
        for column, value in zip(COLUMNS, (verdict.label, verdict.gbs, verdict.samples_to_converge), strict=True):
            if value is not None:
                columns[column] = value
    rows: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for (submitter, system), benchmarks in by_system.items():
        rows[(found.systems[(submitter, system)]["submitter"], system)].append(benchmarks)
    return rows


def official_rows(csv_path: Path) -> tuple[list[str], dict[tuple[str, str], list[dict]]]:
    """The detailed summary's benchmarks and, per (submitter, system file stem of details_url), its rows."""
    with open(csv_path, newline="") as fh:
        reader = csv.DictReader(fh)
        benchmarks = [c.removesuffix(":RCP") for c in reader.fieldnames if c.endswith(":RCP")]
        rows: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for row in reader:
            submitter, system_file = row["details_url"].split("/blob/main/", 1)[1].split("/systems/", 1)
            rows[(submitter, system_file.removesuffix(".json"))].append(row)
    return benchmarks, rows


def _cell(value) -> str:
    """A cell as text: floats by repr, so that they compare exactly."""
    return "" if value is None else value if isinstance(value, str) else repr(float(value))


def _csv_cell(row: dict, benchmark: str, column: str) -> str:
    text = row.get(f"{benchmark}:{column}", "")
    return text if column == "RCP" or not text else _cell(float(text))


def compare(csv_path: Path, computed: dict) -> tuple[int, list]:
    """Every closed row's RCP, GBS and samples_to_converge cells (floats compared exactly), rows with the
    same key (one system published under several submitter folders) as multisets."""
    benchmarks, expected = official_rows(csv_path)
    cells = [(b, c) for b in benchmarks for c in COLUMNS]
    checked, mismatches = 0, []
    for key, rows in expected.items():
        closed = [r for r in rows if r["division"] == "closed"]
        if not closed:
            continue
        want = sorted(tuple(_csv_cell(r, b, c) for b, c in cells) for r in closed)
        got = sorted(tuple(_cell(row.get(b, {}).get(c)) for b, c in cells)
                     for row in computed.get(key) or [{}] * len(closed))
        checked += len(closed) * len(cells)
        if want != got:
            diff = [(f"{b}:{c}", w, g) for w_row, g_row in zip(want, got, strict=False)
                    for (b, c), w, g in zip(cells, w_row, g_row, strict=True) if w != g]
            mismatches.append((key, diff or (len(want), len(got))))
    return checked, mismatches


CASES = [(TRAINING, v) for v in shared_rounds(TRAINING)] + [(HPC, v) for v in shared_rounds(HPC)]


@pytest.mark.parametrize("suite,version", CASES, ids=[f"{s.usage}-{v}" for s, v in CASES])
def test_rcp_columns_match_todays_scorer(suite, version):
    release = installed_release()
    assert release[0].supported, release[0].unsupported
    computed = computed_rows(read_round(suite, version), suite.usage, version, release)
    checked, mismatches = compare(summary_path(suite, version), computed)
    assert checked > 0
    assert not mismatches, mismatches[:5]


def test_rcp_columns_match_the_v6_0_release():
    csv_path = SHARED_MLPERF / "official_era" / "v6.0_summary_detailed.csv"
    archive = SHARED_MLPERF / "logging" / "logging-6.0.0-rc6.tar.gz"
    if not csv_path.exists() or not archive.exists() or not archive_path(TRAINING, "v6.0").exists():
        pytest.skip("no v6.0 archive, 6.0.0-rc6 release or its detailed summary in ../shared/mlperf")
    release = archived_release(archive)
    assert release[0].supported and "6.0.0" in release[0].rulesets
    checked, mismatches = compare(csv_path, computed_rows(read_round(TRAINING, "v6.0"), "training", "v6.0", release))
    assert checked > 0
    assert not mismatches, mismatches[:5]
