"""Per round: how many results, how many have a score as published, why the rest have none, and
how many published scores today's rules would reject. Shown after every refresh."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipelines.lib.mlperf.rounds import round_sort_key
from pipelines.lib.mlperf.suites import HPC, INFERENCE, TRAINING, Suite

_PER_ROUND = """
select
    round,
    count(*) as results,
    count(score_minutes) as scored,
    count(*) filter (where score_minutes is not null and score_minutes_current_rules is null)
        as rejected_by_current_rules,
    any_value(rules_provisional_reason) as provisional
from fct_training_result
group by round
"""
# Per round, unscored results grouped by kind of reason: counts and file names inside a reason ("too many runs
# dropped (2 > 1): 2 by compliance: ... (result_1.txt, result_4.txt)") would split one kind into many.
_UNSCORED = """
select round,
    case
        when no_score_reason like 'too many runs dropped%' then 'too many runs dropped, most by '
            || trim(regexp_extract(no_score_reason, '^too many runs dropped \\(\\d+ > \\d+\\): \\d+ by ([^:(]+)', 1))
        else no_score_reason
    end as reason,
    count(*) as results
from fct_training_result
where score_minutes is null
group by all
order by round, results desc, reason
"""


# MLPerf HPC: a result's figure is its strong score or its weak throughput.
_HPC_PER_ROUND = """
select
    round,
    count(*) as results,
    count(coalesce(score_minutes, models_per_minute)) as scored,
    count(*) filter (where score_minutes is not null and score_minutes_current_rules is null
                     or models_per_minute is not null and models_per_minute_current_rules is null)
        as rejected_by_current_rules,
    any_value(rules_provisional_reason) as provisional
from fct_hpc_result
group by round
"""
_HPC_UNSCORED = """
select round, regexp_replace(coalesce(no_score_reason, throughput_null_reason), ' \\(\\d+ [<>] \\d+\\)', '') as reason,
    count(*) as results
from fct_hpc_result
where coalesce(score_minutes, models_per_minute) is null
group by all
order by round, results desc, reason
"""


# MLPerf Inference: a result counts when LoadGen judged it VALID and its metric could be derived.
_INFERENCE_PER_ROUND = """
select round, count(*) as results, count(*) filter (where valid) as scored, 0 as rejected_by_current_rules,
    null as provisional
from fct_inference_result
group by round
"""
_INFERENCE_UNSCORED = """
select round, invalid_reason as reason, count(*) as results
from fct_inference_result
where not valid
group by all
order by round, results desc, reason
"""


# Each suite's queries: (results per round, unscored results by reason)
_QUERIES = {TRAINING.name: (_PER_ROUND, _UNSCORED), HPC.name: (_HPC_PER_ROUND, _HPC_UNSCORED),
            INFERENCE.name: (_INFERENCE_PER_ROUND, _INFERENCE_UNSCORED)}


def round_coverage(db: Path, suite: Suite = TRAINING) -> list[dict]:
    """Per round of `suite`, from the published warehouse; another suite's rounds are named with its label
    (`HPC v3.0`, `Inference v5.1`)."""
    per_round, unscored = _QUERIES[suite.name]
    con = duckdb.connect(str(db), read_only=True)
    try:
        try:
            found = con.execute(per_round).fetchall()
        except duckdb.CatalogException:  # a warehouse published before the suite was loaded
            return []
        rows = {r[0]: {"round": r[0], "results": r[1], "scored": r[2], "rejected_by_current_rules": r[3],
                       "provisional": r[4], "unscored": {}} for r in found}
        for round_version, reason, count in con.execute(unscored).fetchall():
            rows[round_version]["unscored"][reason or "unknown"] = count
    finally:
        con.close()
    ordered = [rows[r] for r in sorted(rows, key=round_sort_key)]
    for row in ordered:
        row["round"] = suite.round_label(row["round"])
    return ordered


def render_coverage(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        unscored = "; ".join(f"{n} {reason}" for reason, n in row["unscored"].items())
        lines.append(
            f"{row['round']}: {row['results']} results, {row['scored']} scored as published"
            + (f", unscored: {unscored}" if unscored else "")
            + (f"; today's rules would reject {row['rejected_by_current_rules']}" if row["rejected_by_current_rules"] else "")
            + (f"; PROVISIONAL: {row['provisional']}" if row.get("provisional") else "")
        )
    return lines
