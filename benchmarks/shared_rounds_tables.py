"""Refresh every shared round with the shared price lists, as a user's first refresh does, and print the
tables README shows (markdown): the median steady-state ÷ end-to-end throughput ratio per benchmark and
round, the scaling kinds, the cost headline, and what the plausibility checks nulled.

Serves ../shared over HTTP on 127.0.0.1 and runs `mlperf-warehouse refresh` (all shared rounds, with the
price lists) in a subprocess into a scratch warehouse, then reads the published file.
Usage: python benchmarks/shared_rounds_tables.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.github import serve_logging_repository  # noqa: E402
from support.http_server import LoopbackServer  # noqa: E402
from support.paths import SHARED_MLPERF  # noqa: E402
from support.price_site import PRICE_URL_VARIABLES, serve_fixtures  # noqa: E402
from support.shared_build import RULES_TEMPLATE, TRAINING_TEMPLATE, shared_rounds  # noqa: E402


def refresh_all(warehouse: Path) -> tuple[int, float, str]:
    rounds = shared_rounds()
    with LoopbackServer(SHARED_MLPERF) as server, LoopbackServer() as prices:
        serve_fixtures(prices)
        serve_logging_repository(server)  # GitHub's API for the rules releases of rounds rules_refs.csv lacks
        env = os.environ | {"MLPERF_WAREHOUSE_DIR": str(warehouse), "MLPERF_GCP_API_KEY": "benchmark-key",
                            "MLPERF_GITHUB_API_URL": server.url}
        env.pop("DAGSTER_HOME", None)
        env |= {variable: prices.url for variable in PRICE_URL_VARIABLES}
        started = time.perf_counter()
        done = subprocess.run(
            [str(Path(sys.executable).parent / "mlperf-warehouse"), "refresh", "--suites", "training",
             "--rounds", ",".join(rounds),
             "--results-url-template", server.url + TRAINING_TEMPLATE,
             "--rules-url-template", server.url + RULES_TEMPLATE],
            env=env, capture_output=True, text=True)
        return done.returncode, time.perf_counter() - started, done.stdout


def markdown(headers: list[str], rows: list[tuple]) -> str:
    def cell(v):
        return "" if v is None else f"{v:.3g}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def tables(con: duckdb.DuckDBPyConnection) -> None:
    rounds = [r for (r,) in con.execute(
        "select distinct round from fct_training_run order by round_order(round)").fetchall()]
    ratio = {(b, r): (v, n) for b, r, v, n in con.execute("""
        select benchmark, round, median(steady_to_end_to_end_ratio) filter (where scored),
               any_value(throughput_null_reason) filter (where throughput_null_reason like 'median%')
        from fct_training_run group by all""").fetchall()}
    benchmarks = sorted({b for b, _ in ratio})
    rows = []
    for b in benchmarks:
        cells = []
        for r in rounds:
            if (b, r) not in ratio:
                cells.append("")
            else:
                value, nulled = ratio[(b, r)]
                cells.append("nulled" if nulled else "—" if value is None else f"{value:.3f}")
        rows.append((b, *cells))
    print("### Median steady-state ÷ end-to-end throughput, scored runs (— : no throughput measurable)\n")
    print(markdown(["benchmark", *rounds], rows))
    outside = con.execute("""
        select count(*) from (select round, benchmark, median(steady_to_end_to_end_ratio) filter (where scored) m
        from fct_training_run group by all) where m not between 0.9 and 1.5""").fetchone()[0]
    print(f"\n(benchmark rounds with a median outside [0.9, 1.5] left with figures: {outside})\n")

    print("### Samples to converge: scored runs with a figure, and why the others have none\n")
    print(markdown(["reason", "scored runs"], con.execute("""
        select coalesce(regexp_replace(samples_to_converge_null_reason, ' \\(.*', ''), '(has a figure)'), count(*)
        from fct_training_run where scored group by 1 order by 2 desc""").fetchall()))

    print("\n### Scaling kinds of the scaling pairs\n")
    print(markdown(["scaling_kind", "pairs", "with a throughput efficiency", "median throughput efficiency"],
                   con.execute("""
        select coalesce(scaling_kind, '(batch size unknown)'), count(*), count(throughput_scaling_efficiency),
               median(throughput_scaling_efficiency)
        from mart_scaling_efficiency where is_scaling_pair group by 1 order by 2 desc""").fetchall()))

    print("\n### Cost headline (mart_cost_to_train_headline): scored results per round\n")
    print(markdown(["round", "scored results", "bookable cost", "only market prices", "no price",
                    "median bookable $", "median market $"], con.execute("""
        select round, count(*), count(cost_to_train_usd),
               count(*) filter (where no_cost_reason like 'only market%'),
               count(*) filter (where cost_to_train_usd is null and no_cost_reason not like 'only market%'),
               median(cost_to_train_usd), median(marketplace_cost_to_train_usd)
        from mart_cost_to_train_headline group by 1 order by round_order(round)""").fetchall()))
    cheaper = con.execute("""
        select count(*) filter (where marketplace_cost_to_train_usd < cost_to_train_usd), count(cost_to_train_usd)
        from mart_cost_to_train_headline""").fetchone()
    print(f"\n(results whose cheapest market price undercuts the headline: {cheaper[0]} of {cheaper[1]} costed)\n")

    print("### Precision of the scored results (mart_utilization)\n")
    print(markdown(["precision_source", "precision", "results", "with MFU", "MFU nulled above 1"], con.execute("""
        select precision_source, precision, count(*), count(mfu), count(*) filter (where mfu_null_reason like 'MFU %')
        from mart_utilization group by all order by 1, 2""").fetchall()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="refresh into this warehouse directory and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        warehouse = args.keep or Path(tmp) / "warehouse"
        code, seconds, out = refresh_all(warehouse)
        print(f"refresh of every shared round with the price lists: exit {code} in {seconds:.1f} s")
        print(out.rsplit("coverage per round:", 1)[-1].strip() if "coverage per round:" in out else out[-3000:])
        print()
        if (warehouse / "mlperf.duckdb").exists():
            tables(duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True))


if __name__ == "__main__":
    main()
