"""Per round: how many results, how many have a score as published, why the rest have none, and
how many published scores today's rules would reject (or that they give no verdict on: a round the pinned
package ships no rules of). Shown after every refresh."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from pipelines.lib.mlperf.rounds import round_sort_key
from pipelines.lib.mlperf.rules import current_rules_missing
from pipelines.lib.mlperf.suites import Suite


def round_coverage(db: Path, suites: Sequence[Suite]) -> list[dict]:
    """Per round of each of `suites` (in that order), from the published warehouse (int_round_coverage,
    int_round_unscored), on one connection; each round is named by its suite's label (`v4.1`, `HPC v3.0`,
    `Inference v5.1`)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [row for suite in suites for row in _suite_coverage(con, suite)]
    finally:
        con.close()


def _suite_coverage(con: duckdb.DuckDBPyConnection, suite: Suite) -> list[dict]:
    try:
        found = con.execute("select round, results, scored, rejected_by_current_rules, provisional "
                            "from int_round_coverage where suite = ?", [suite.name]).fetchall()
    except duckdb.CatalogException:  # a warehouse published before the coverage was a model
        return []
    rows = {r[0]: {"round": r[0], "results": r[1], "scored": r[2], "rejected_by_current_rules": r[3],
                   "provisional": r[4], "unscored": {}} for r in found}
    for round_version, reason, count in con.execute(
            "select round, reason, results from int_round_unscored where suite = ? "
            "order by round, results desc, reason", [suite.name]).fetchall():
        rows[round_version]["unscored"][reason] = count
    ordered = [rows[r] for r in sorted(rows, key=round_sort_key)]
    for row in ordered:
        row["current_rules_missing"] = (current_rules_missing(row["round"], suite)
                                        if row["rejected_by_current_rules"] else None)
        row["round"] = suite.round_label(row["round"])
    return ordered


def render_coverage(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        unscored = "; ".join(f"{n} {reason}" for reason, n in row["unscored"].items())
        lines.append(
            f"{row['round']}: {row['results']} results, {row['scored']} scored as published"
            + (f", unscored: {unscored}" if unscored else "")
            + _today_s_rules(row)
            + (f"; PROVISIONAL: {row['provisional']}" if row.get("provisional") else "")
        )
    return lines


def _today_s_rules(row: dict) -> str:
    rejected = row["rejected_by_current_rules"]
    if not rejected:
        return ""
    if row.get("current_rules_missing"):
        return f"; today's rules give its {rejected} published scores no verdict: they ship none of its rules"
    return f"; today's rules would reject {rejected}"
