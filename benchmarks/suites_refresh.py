"""Refresh every shared round of every suite (Training, HPC, Inference) with the shared price lists, cold, as
one `mlperf-warehouse refresh` process over HTTP on 127.0.0.1, and print what it took and what it published:
seconds to the publish, peak memory, the coverage per round, and the figures the HPC and Inference docs
show (scores and throughputs equal to the references, priced share of closed datacenter LLM results, the
llama2-70b-99 Server price table).

Usage: python benchmarks/suites_refresh.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
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
from support.shared_build import setting_variables, shared_sources  # noqa: E402


def refresh(warehouse: Path) -> tuple[int, float, str]:
    with LoopbackServer(SHARED_MLPERF) as server, LoopbackServer() as prices:
        serve_fixtures(prices)
        serve_logging_repository(server)  # GitHub's API for the rules releases of rounds rules_refs.csv lacks
        env = os.environ | {name: prices.url for name in PRICE_URL_VARIABLES} | {
            "MLPERF_GITHUB_API_URL": server.url,
            "MLPERF_WAREHOUSE_DIR": str(warehouse), "DAGSTER_HOME": str(warehouse / "dagster"),
            "MLPERF_SUITES": "training,hpc,inference"} | setting_variables(shared_sources(server.url))
        (warehouse / "dagster").mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        proc = subprocess.run([str(Path(sys.executable).parent / "mlperf-warehouse"), "refresh"], env=env,
                              capture_output=True, text=True)
        return proc.returncode, time.perf_counter() - started, proc.stdout + proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the warehouse in this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        warehouse = args.keep or Path(scratch) / "warehouse"
        code, seconds, output = refresh(warehouse)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        published = re.search(r"published after ([\d.]+)s", output)
        print(f"exit {code}; whole command {seconds:.1f} s; to the publish "
              f"{published.group(1) if published else '?'} s; peak RSS {peak:.0f} MB")
        print("\n".join(line for line in output.splitlines() if line.startswith(("  v", "  HPC", "  Inference"))
                        or "WARN" in line or "warning" in line))
        con = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True)
        print(con.sql("""select round, scale, count(*) as results, count(score_minutes) as strong_scored,
            count(models_per_minute) as weak_with_throughput from fct_hpc_result group by all order by all"""))
        print(con.sql("""select count(*) as closed_datacenter_llm_results, count(usd_per_million) as priced,
            round(100.0 * count(usd_per_million) / count(*), 1) as percent
            from mart_inference_cost as c join dim_inference_system as s using (round, division, submitter, system)
            where c.division = 'closed' and c.unit = 'tokens' and s.system_type like '%datacenter%'"""))
        print(con.sql("""select submitter, system_name, accelerator_count, accelerator, round(performance_result) as tokens_s,
            round(price_per_accelerator_hour_usd, 2) as usd_per_acc_hour, provider, round(usd_per_million, 3) as usd_per_mtok
            from mart_inference_cost where model = 'llama2-70b-99' and scenario = 'Server' and division = 'closed'
              and usd_per_million is not null
            qualify row_number() over (partition by accelerator order by usd_per_million) = 1
            order by usd_per_million"""))
        # the coverage table of docs/pages/hpc.md
        print(con.sql("""select round, count(distinct submitter) as submitters, count(distinct (submitter, system)) as systems,
            (select count(*) from fct_hpc_run as x where x.round = r.round) as runs,
            (select count(*) from fct_quarantine as q where q.source = 'mlperf-hpc' and q.partition = r.round)
                as quarantined
            from fct_hpc_result as r group by round order by round"""))
        # why the other closed datacenter LLM results have no price (docs/pages/inference.md)
        print(con.sql("""select no_cost_reason, count(*) as results
            from mart_inference_cost as c join dim_inference_system as s using (round, division, submitter, system)
            where c.division = 'closed' and c.unit = 'tokens' and s.system_type like '%datacenter%'
              and c.usd_per_million is null group by all order by results desc"""))
        print(con.sql("""select count(*) as results, count(usd_per_million) as priced,
            round(median(usd_per_million), 3) as median_usd_per_mtok from mart_inference_cost
            where model = 'llama2-70b-99' and scenario = 'Server' and division = 'closed'"""))
        # the worked examples of README and docs/pages/hpc.md, inference.md
        print(con.sql("""select round, system, benchmark, number_of_models, round(time_to_train_all_minutes, 3) as minutes,
            round(models_per_minute, 3) as models_per_minute from fct_hpc_result
            where round = 'v3.0' and scale = 'weak' and system like 'eos%' and benchmark = 'deepcam'"""))
        print(con.sql("""select round, system, accelerator_count, round(score_minutes, 3) as minutes,
            round(speedup, 2) as speedup, round(convergence_scaling_efficiency, 3) as efficiency from mart_hpc_strong_scaling
            where round = 'v1.0' and submitter = 'NVIDIA' and benchmark = 'cosmoflow' order by accelerator_count"""))
        print(con.sql("""select count(*) filter (where power_submission) as power_results, count(power_w) as with_power
            from fct_inference_result"""))
        print(con.sql("""select f.system_name, f.model, f.scenario, round(f.power_w) as watts,
            round(f.performance_result) as tokens_s, round(f.joules_per_unit, 3) as joules_per_token,
            round(c.kwh_per_million, 3) as kwh_per_mtok, round(c.facility_kwh_per_million, 3) as facility_kwh_per_mtok
            from fct_inference_result as f join mart_inference_cost as c using (round, location)
            where f.model = 'llama2-70b-99' and f.scenario = 'Offline' and f.power_w is not null"""))
        con.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
