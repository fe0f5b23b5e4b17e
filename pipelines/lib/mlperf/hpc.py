"""One MLPerf HPC round's archive → runs, systems and scaling factors, plus quarantine.

The layout is Training's with one more level: `<org>/results/<system>/{strong,weak}/<benchmark>/
result_*.txt` (v0.7: `<org>/results/<system>/<benchmark>/result_*.txt`, every result a time to train,
i.e. strong). Each log is scored exactly as a Training log (`scorer.score_run`: the rules of the
round's release and today's, in the rule language); what HPC adds per log is its instance scale
(`number_of_nodes` × `accelerators_per_node`), which the weak-scaling metric needs.

Reading the archive honours the round's scoring deadline (MLPERF_SCORING_DEADLINE_SECONDS) as scoring does: it
is checked for every member and every read of a result log, not only when scored logs come back.
"""

from __future__ import annotations

import time

from pipelines.lib.mlperf import power
from pipelines.lib.mlperf.archive import iter_members, results_folder_index
from pipelines.lib.mlperf.rejections import ScoringDeadline
from pipelines.lib.mlperf.round_parser import (
    RoundTables,
    add_benchmark_json,
    add_system,
    check_round_declared,
    quarantine,
    quarantine_unscored_run,
)
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.scoring_pool import ResultScorer, end_pool, small_archive
from pipelines.lib.mlperf.suites import HPC

SCALES = ("strong", "weak")
# v0.7 had no strong/weak level: every result is a time to train on the whole system.
IMPLIED_SCALE = "strong"


def hpc_result_keys(parts: list[str]) -> tuple[str, str, str, bool, list[str]] | None:
    """(submitter, system, scale, scale_implied, the path below the scale folder) of a member under a
    `results` folder; None elsewhere."""
    i = results_folder_index(parts)
    if i != 1 or len(parts) < 4:
        return None
    below = parts[3:]
    if below[0] in SCALES:
        return parts[0], parts[2], below[0], False, below[1:]
    return parts[0], parts[2], IMPLIED_SCALE, True, below


def parse_hpc_round(archive, round_version: str, rules: RoundRules, workers: int | None = None) -> RoundTables:
    """All tables of one HPC round; result logs are scored like Training's (scoring_pool.ResultScorer)."""
    tables = RoundTables()
    keys: dict[str, tuple[str, str, str, bool, str]] = {}
    with ResultScorer(round_version, rules, workers, small=small_archive(archive)) as scorer:
        def tick() -> None:  # the scorer's deadline, while the archive is read
            if time.time() > scorer.deadline:
                if scorer.pool is not None:  # its workers may be busy past the deadline: ended, as _wait does
                    end_pool()
                raise ScoringDeadline(round_version)

        for member in iter_members(archive, tick=tick):
            _route(tables, scorer, keys, round_version, member)
        for path, row, _events in scorer.results():
            submitter, system, scale, implied, benchmark = keys[path]
            row.update(round=round_version, submitter=submitter, system=system, scale=scale, scale_implied=implied,
                       benchmark=benchmark, run_file=path)
            tables.runs.append(row)
            quarantine_unscored_run(tables, round_version, path, row, source=HPC.quarantine_source)
    check_round_declared(archive, round_version, tables, HPC)
    return tables


def _route(tables: RoundTables, scorer: ResultScorer, keys: dict, round_version: str, member) -> None:
    source = HPC.quarantine_source
    if member.refused:
        quarantine(tables, round_version, member.path, member.refused, source=source)
        return
    parts = member.path.split("/")
    name = parts[-1]
    if parts[1] == "systems":
        add_system(tables, round_version, member.path, member.data, parts[0], name[: -len(".json")], source=source)
        return
    found = hpc_result_keys(parts)
    if found is None:
        quarantine(tables, round_version, member.path, "not in any HPC results layout", source=source)
        return
    submitter, system, scale, implied, below = found
    if len(below) < 2:
        quarantine(tables, round_version, member.path,
                   "file outside any benchmark folder (HPC: <system>/{strong,weak}/<benchmark>/)", source=source)
    elif power.is_power_file(below):
        quarantine(tables, round_version, member.path,
                   "an HPC power log: HPC energy is not computed yet, so the result has no energy", source=source)
    elif name.endswith(".json"):
        if len(below) == 2:  # the scale is part of the folder's key (v0.7's implied strong and an explicit one)
            add_benchmark_json(tables, round_version, member, submitter, system, below[0], source=source, scale=scale)
    elif len(below) != 2:
        why = ("pruned by the submitter (pruned_results)" if "pruned_results" in below
               else "nested below the benchmark folder")
        quarantine(tables, round_version, member.path, f"result file {why}: the official scorer does not read it",
                   source=source)
    else:
        keys[member.path] = (submitter, system, scale, implied, below[0])
        scorer.submit(member.path, member.data)
